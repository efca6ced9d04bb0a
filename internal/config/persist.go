package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/arbor-run/arbor/internal/atomicfile"
)

// SaveProviderKey stores key as providers.<provider>.api_key in the config
// file at path (the user's: Config.UserConfigFile), creating the file and
// its directory when missing. Front ends that receive a credential call it
// instead of writing config files themselves, then reload the config.
//
// The rest of the file is kept as the user wrote it — other keys, comments,
// blank lines, indentation: the value is spliced into the text where the
// key is, or the few missing lines are inserted. Only an unusual shape
// (a flow mapping such as `providers: {…}`, an empty or multi-line value)
// is rewritten through a YAML encoder, which keeps the keys and comments
// but not blank lines.
//
// The file is replaced atomically (a temporary file in the same directory,
// synced, then renamed over it), so a reader sees the old file or the new
// one, never part of one; it gets mode 0600, as it holds a secret. A
// symlinked file is written through the link.
func SaveProviderKey(path, provider, key string) error {
	if path == "" {
		return errors.New("no user config directory to save the key in")
	}
	if provider == "" || key == "" {
		return errors.New("save provider key: provider and key must not be empty")
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	src, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	out, err := setProviderKey(src, provider, key)
	if err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	if err := atomicfile.Write(path, out, 0o600, 0o700); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// setProviderKey returns src with providers.<id>.api_key set to key.
func setProviderKey(src []byte, id, key string) ([]byte, error) {
	val := quote(key)
	k := yamlKey(id)
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 { // empty, or only comments
		return appendLines(src, "providers:", "  "+k+":", "    api_key: "+val), nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, errors.New("the file must hold a mapping of keys")
	}
	pkey, providers := lookup(root, "providers")
	if providers == nil {
		return appendLines(src, "providers:", "  "+k+":", "    api_key: "+val), nil
	}
	if !blockMapping(providers) {
		return reencode(&doc, root, id, key)
	}
	step := max(providers.Content[0].Column-pkey.Column, 1)
	ekey, entry := lookup(providers, id)
	if entry == nil {
		in := strings.Repeat(" ", providers.Content[0].Column-1)
		return insertAfter(src, pkey.Line, in+k+":", in+strings.Repeat(" ", step)+"api_key: "+val), nil
	}
	if !blockMapping(entry) {
		return reencode(&doc, root, id, key)
	}
	_, old := lookup(entry, "api_key")
	if old == nil {
		in := strings.Repeat(" ", entry.Content[0].Column-1)
		return insertAfter(src, ekey.Line, in+"api_key: "+val), nil
	}
	if out, ok := splice(src, old, val); ok {
		return out, nil
	}
	return reencode(&doc, root, id, key)
}

// lookup returns the key and value nodes of name in mapping m.
func lookup(m *yaml.Node, name string) (k, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == name {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// blockMapping reports a non-empty mapping written in block style, whose
// lines can be edited in place.
func blockMapping(n *yaml.Node) bool {
	return n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle == 0 && len(n.Content) > 0
}

// splice replaces the single-line scalar n in src by val, keeping what
// follows it on the line (a comment).
func splice(src []byte, n *yaml.Node, val string) ([]byte, bool) {
	if n.Kind != yaml.ScalarNode || n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 || n.Anchor != "" || strings.Contains(n.Value, "\n") {
		return nil, false
	}
	lines := strings.SplitAfter(string(src), "\n")
	if n.Line < 1 || n.Line > len(lines) {
		return nil, false
	}
	line := lines[n.Line-1]
	start := n.Column - 1
	if start < 0 || start >= len(line) {
		return nil, false
	}
	end := scalarEnd(line, start)
	if end < 0 || n.Style == 0 && line[start:end] != n.Value {
		return nil, false // an empty value, or one the scan misread
	}
	if start > 0 && line[start-1] == ':' { // an empty value: "key:"
		val = " " + val
	}
	lines[n.Line-1] = line[:start] + val + line[end:]
	return []byte(strings.Join(lines, "")), true
}

// scalarEnd returns where the scalar starting at line[start] ends, -1 when
// it does not end on this line or is not a plain or quoted scalar.
func scalarEnd(line string, start int) int {
	switch line[start] {
	case '"':
		for i := start + 1; i < len(line); i++ {
			switch line[i] {
			case '\\':
				i++
			case '"':
				return i + 1
			}
		}
		return -1
	case '\'':
		for i := start + 1; i < len(line); i++ {
			if line[i] == '\'' {
				if i+1 < len(line) && line[i+1] == '\'' {
					i++
					continue
				}
				return i + 1
			}
		}
		return -1
	case '!', '&', '*', '|', '>', '[', '{':
		return -1
	}
	end := len(strings.TrimRight(line, "\r\n"))
	if i := strings.Index(line[start:], " #"); i >= 0 {
		end = start + i
	}
	return len(strings.TrimRight(line[:end], " \t"))
}

// reencode sets the key on the parsed document and encodes it again.
func reencode(doc *yaml.Node, root *yaml.Node, id, key string) ([]byte, error) {
	m := root
	for _, name := range []string{"providers", id} {
		_, v := lookup(m, name)
		if v == nil {
			v = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name}, v)
		} else if v.Kind != yaml.MappingNode {
			*v = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", HeadComment: v.HeadComment, LineComment: v.LineComment}
		}
		m = v
	}
	s := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key, Style: yaml.DoubleQuotedStyle}
	if _, v := lookup(m, "api_key"); v != nil {
		s.LineComment = v.LineComment
		*v = *s
	} else {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "api_key"}, s)
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// insertAfter inserts lines after line number n (1-based) of src.
func insertAfter(src []byte, n int, lines ...string) []byte {
	all := strings.SplitAfter(string(src), "\n")
	if n > len(all) {
		n = len(all)
	}
	head := strings.Join(all[:n], "")
	if !strings.HasSuffix(head, "\n") {
		head += "\n"
	}
	return []byte(head + strings.Join(lines, "\n") + "\n" + strings.Join(all[n:], ""))
}

// appendLines adds lines at the end of src.
func appendLines(src []byte, lines ...string) []byte {
	s := string(src)
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return []byte(s + strings.Join(lines, "\n") + "\n")
}

// quote writes s as a YAML double-quoted scalar (a JSON string is one).
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// plainKey matches a key YAML writes bare. Like every pattern of arbor's,
// it is compiled on first use: a start compiles none (docs/benchmarks.md,
// "Eleventh round").
var plainKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`) })

// yamlKey writes a mapping key, quoted unless it is a plain name.
func yamlKey(s string) string {
	if plainKey().MatchString(s) {
		return s
	}
	return quote(s)
}
