package envelope_test

// The golden transcripts' server, normalization and transcript files; the
// format and the replay are in golden_test.go, the cases in
// golden_cases_test.go.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/protocol/envelope"
	"github.com/arbor-run/arbor/internal/protocol/golden"
)

// goldenServer is one envelope server over pipes, with its raw output
// lines.
type goldenServer struct {
	t    *testing.T
	home string
	ws   string
	in   *io.PipeWriter
	outs chan string
	diag *syncBuffer
	done chan error
}

// startGolden starts a server on a, the app of workspace ws under home.
func startGolden(t *testing.T, a *app.App, home, ws string) *goldenServer {
	t.Helper()
	pr, pw := io.Pipe()
	or, ow := io.Pipe()
	g := &goldenServer{t: t, home: home, ws: ws, in: pw, outs: make(chan string, 4096), diag: &syncBuffer{}, done: make(chan error, 1)}
	go func() {
		err := envelope.Serve(context.Background(), a, pr, ow, g.diag, envelope.Options{})
		ow.Close()
		g.done <- err
	}()
	go func() {
		sc := bufio.NewScanner(or)
		sc.Buffer(make([]byte, 1<<20), 4<<20)
		for sc.Scan() {
			g.outs <- sc.Text()
		}
		close(g.outs)
	}()
	t.Cleanup(func() { pw.Close() })
	return g
}

func (g *goldenServer) send(line string) {
	g.t.Helper()
	if _, err := io.WriteString(g.in, line+"\n"); err != nil {
		g.t.Fatal(err)
	}
}

// normalizer maps varying values to stable placeholders and back.
type normalizer struct {
	home     string
	ph       map[string]string // real value → placeholder
	real     map[string]string // placeholder → real value
	seq      map[string]int    // per kind
	sessions []string          // real session ids, replaced inside any string
}

func newNormalizer(home string) *normalizer {
	return &normalizer{home: home, ph: map[string]string{}, real: map[string]string{}, seq: map[string]int{}}
}

// idPattern matches the tool call ids the model server mints.
var idPattern = regexp.MustCompile(`^(toolu|call)_[A-Za-z0-9_-]{8,}$`)

func (n *normalizer) id(kind, v string) string {
	if p, ok := n.ph[v]; ok {
		return p
	}
	n.seq[kind]++
	p := fmt.Sprintf("<%s:%d>", kind, n.seq[kind])
	n.ph[v], n.real[p] = p, v
	if kind == "session" {
		n.sessions = append(n.sessions, v)
	}
	return p
}

// normalize returns v (a decoded line, or part of one under key) with its
// varying values replaced.
func (n *normalizer) normalize(key string, v any) any {
	switch v := v.(type) {
	case golden.Object:
		o := make(golden.Object, len(v))
		for i, m := range v {
			o[i] = golden.Member{Key: m.Key, Value: n.normalize(m.Key, m.Value)}
		}
		return o
	case []any:
		a := make([]any, len(v))
		for i, x := range v {
			a[i] = n.normalize("", x)
		}
		return a
	case string:
		switch {
		case v == "":
		case key == "updated_at" || key == "deadline":
			return "<time>"
		case key == "session_id":
			return n.id("session", v)
		case idPattern.MatchString(v):
			return n.id(idPattern.FindStringSubmatch(v)[1], v)
		default:
			for _, s := range n.sessions {
				v = strings.ReplaceAll(v, s, n.ph[s])
			}
			return strings.ReplaceAll(v, n.home, "<home>")
		}
	}
	return v
}

// restore replaces placeholders in an "in" value by this run's values.
func (n *normalizer) restore(v any) any {
	switch v := v.(type) {
	case golden.Object:
		o := make(golden.Object, len(v))
		for i, m := range v {
			o[i] = golden.Member{Key: m.Key, Value: n.restore(m.Value)}
		}
		return o
	case []any:
		a := make([]any, len(v))
		for i, x := range v {
			a[i] = n.restore(x)
		}
		return a
	case string:
		if r, ok := n.real[v]; ok {
			return r
		}
		return strings.ReplaceAll(v, "<home>", n.home)
	}
	return v
}

// rawLine is the text of an in_raw entry: a string as it is, or an object
// {"prefix", "repeat", "count", "suffix"} standing for prefix, repeat
// count times and suffix, so that a line over the 1 MiB limit does not
// make a 1 MiB file.
func rawLine(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case golden.Object:
		var r struct {
			Prefix, Repeat, Suffix string
			Count                  int
		}
		b, err := golden.Marshal(v)
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err != nil {
			return "", err
		}
		return r.Prefix + strings.Repeat(r.Repeat, r.Count) + r.Suffix, nil
	}
	return "", fmt.Errorf("in_raw must be a string or a repeat object, got %s", golden.Show(v))
}

// readTranscript reads a transcript file as entries, keeping the key
// order of every object, so "in" lines are sent as they were recorded.
func readTranscript(t *testing.T, path string) []entry {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `go test -run Golden -update` to record it)", err)
	}
	var es []entry
	for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		v, err := golden.DecodeOrdered([]byte(line))
		o, ok := v.(golden.Object)
		if err != nil || !ok || len(o) != 1 {
			t.Fatalf("%s:%d: want an object with one key (%v)", path, i+1, err)
		}
		es = append(es, entry{o[0].Key, o[0].Value})
	}
	return es
}

func writeTranscript(t *testing.T, path string, es []entry) {
	t.Helper()
	var b bytes.Buffer
	for _, e := range es {
		line, err := golden.Marshal(golden.Object{{Key: e.kind, Value: e.value}})
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d lines): review it against the spec", path, len(es))
}
