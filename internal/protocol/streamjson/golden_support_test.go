package streamjson_test

// The golden transcripts' normalization, key-order-preserving JSON and
// diffs; the format and the replay are in golden_test.go.

import (
	"encoding/json"
	"fmt"
	"github.com/arbor-run/arbor/internal/protocol/golden"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// normalizer maps varying values to stable placeholders and back.
type normalizer struct {
	home string
	ph   map[string]string // real value → placeholder
	real map[string]string // placeholder → real value
	seq  map[string]int    // per kind
}

func newNormalizer() *normalizer {
	return &normalizer{ph: map[string]string{}, real: map[string]string{}, seq: map[string]int{}}
}

// idPattern matches the ids the model server and arbor mint for messages
// and tool calls.
var idPattern = regexp.MustCompile(`^(msg|toolu|call|chatcmpl)[_-][A-Za-z0-9_-]{8,}$`)

func (n *normalizer) id(kind, v string) string {
	if p, ok := n.ph[v]; ok {
		return p
	}
	n.seq[kind]++
	p := fmt.Sprintf("<%s:%d>", kind, n.seq[kind])
	n.ph[v], n.real[p] = p, v
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
		if key == "models" {
			// The initialize response lists models in map order; sorting
			// them (each object starts with its "value") fixes one.
			sort.SliceStable(a, func(i, j int) bool { return golden.Show(a[i]) < golden.Show(a[j]) })
		}
		return a
	case json.Number:
		switch key {
		case "duration_ms", "duration_api_ms":
			return "<duration>"
		case "pid":
			return "<pid>"
		}
	case string:
		switch {
		case v == "":
		case key == "uuid":
			return "<uuid>"
		case key == "session_id":
			return n.id("session", v)
		case idPattern.MatchString(v):
			return n.id(idPattern.FindStringSubmatch(v)[1], v)
		case n.home != "":
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
		return n.restoreString(v)
	}
	return v
}

func (n *normalizer) restoreString(s string) string {
	if r, ok := n.real[s]; ok {
		return r
	}
	if n.home != "" {
		return strings.ReplaceAll(s, "<home>", n.home)
	}
	return s
}

// readTranscript reads a transcript file (golden.ReadTranscript).
func readTranscript(t *testing.T, path string) []entry {
	t.Helper()
	es, err := golden.ReadTranscript(path)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// writeTranscript records a transcript file (golden.WriteTranscript).
func writeTranscript(t *testing.T, path string, es []entry) {
	t.Helper()
	if err := golden.WriteTranscript(path, es); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d lines): review it against the spec", path, len(es))
}
