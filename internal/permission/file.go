package permission

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"

	"github.com/arbor-run/arbor/internal/atomicfile"
)

// DefaultProjectFile is where a workspace's project rules live.
func DefaultProjectFile(workspace string) string {
	return filepath.Join(workspace, ".arbor", "permissions.yaml")
}

// fileRule is one entry of a rule file.
type fileRule struct {
	Rule   string `yaml:"rule"`
	Action string `yaml:"action"`
}

type ruleFile struct {
	Rules []fileRule `yaml:"rules"`
}

// fileModes are the permissions of a newly created rule file and its
// directory; user rules are private.
var fileModes = map[Scope][2]fs.FileMode{
	ScopeProject: {0o644, 0o755},
	ScopeUser:    {0o600, 0o700},
}

const fileHeader = "arbor permission rules: {rule: \"tool\" or \"tool(pattern)\", action: allow | ask | deny}; see docs/permissions.md"

// loadRules reads a rule file, each rule through rename; a missing file
// holds no rules.
func loadRules(path string, scope Scope, rename func(string) string) ([]Rule, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrRuleFile, path, err)
	}
	var f ruleFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w %s: %w", ErrRuleFile, path, err)
	}
	rules := make([]Rule, 0, len(f.Rules))
	for i, fr := range f.Rules {
		a, err := ParseAction(fr.Action)
		if err != nil {
			return nil, fmt.Errorf("%w %s: rule %d (%q): %w", ErrRuleFile, path, i+1, fr.Rule, err)
		}
		r, err := ParseRule(rename(fr.Rule), a, scope)
		if err != nil {
			return nil, fmt.Errorf("%w %s: rule %d: %w", ErrRuleFile, path, i+1, err)
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// appendRule adds r at the end of the file's rules, creating the file and
// its directory when needed and keeping existing entries and comments.
func appendRule(path string, r Rule) error {
	doc, seq, err := readDoc(path)
	if err != nil {
		return err
	}
	seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Value: "rule"},
		{Kind: yaml.ScalarNode, Value: r.String(), Style: yaml.DoubleQuotedStyle},
		{Kind: yaml.ScalarNode, Value: "action"},
		{Kind: yaml.ScalarNode, Value: string(r.Action)},
	}})
	return writeDoc(path, doc, r.Scope)
}

// removeRule deletes every entry equal to r; it reports whether there was
// one.
func removeRule(path string, r Rule) (bool, error) {
	doc, seq, err := readDoc(path)
	if err != nil {
		return false, err
	}
	kept := seq.Content[:0]
	for _, n := range seq.Content {
		var fr fileRule
		if err := n.Decode(&fr); err == nil {
			a, errA := ParseAction(fr.Action)
			got, errR := ParseRule(fr.Rule, a, r.Scope)
			if errA == nil && errR == nil && got.same(r) {
				continue
			}
		}
		kept = append(kept, n)
	}
	if len(kept) == len(seq.Content) {
		return false, nil
	}
	seq.Content = kept
	return true, writeDoc(path, doc, r.Scope)
}

// readDoc parses the file as a YAML document and returns it with its rules
// sequence; a missing or empty file gives a fresh document.
func readDoc(path string) (*yaml.Node, *yaml.Node, error) {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("%w %s: %w", ErrRuleFile, path, err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil, fmt.Errorf("%w %s: %w", ErrRuleFile, path, err)
	}
	if doc.Kind == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{
			{Kind: yaml.MappingNode, HeadComment: fileHeader},
		}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("%w %s: the document must be a mapping with a rules list", ErrRuleFile, path)
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "rules" {
			continue
		}
		v := root.Content[i+1]
		switch {
		case v.Kind == yaml.SequenceNode:
		case v.Kind == yaml.ScalarNode && v.Tag == "!!null":
			*v = yaml.Node{Kind: yaml.SequenceNode}
		default:
			return nil, nil, fmt.Errorf("%w %s: rules must be a list", ErrRuleFile, path)
		}
		return &doc, v, nil
	}
	seq := &yaml.Node{Kind: yaml.SequenceNode}
	root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "rules"}, seq)
	return &doc, seq, nil
}

// writeDoc replaces the file atomically. A new file gets the scope's mode;
// an existing one keeps its mode; a symlinked file is written through.
func writeDoc(path string, doc *yaml.Node, scope Scope) error {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("%w %s: %w", ErrRuleFile, path, err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("%w %s: %w", ErrRuleFile, path, err)
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	modes := fileModes[scope]
	perm := modes[0]
	if fi, err := os.Stat(path); err == nil {
		perm = fi.Mode().Perm()
	}
	if err := atomicfile.Write(path, buf.Bytes(), perm, modes[1]); err != nil {
		return fmt.Errorf("%w %s: %w", ErrRuleFile, path, err)
	}
	return nil
}
