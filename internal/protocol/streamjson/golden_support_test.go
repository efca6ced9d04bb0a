package streamjson_test

// The golden transcripts' normalization, key-order-preserving JSON and
// diffs; the format and the replay are in golden_test.go.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
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
	case object:
		o := make(object, len(v))
		for i, m := range v {
			o[i] = member{m.Key, n.normalize(m.Key, m.Value)}
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
			sort.SliceStable(a, func(i, j int) bool { return show(a[i]) < show(a[j]) })
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
	case object:
		o := make(object, len(v))
		for i, m := range v {
			o[i] = member{m.Key, n.restore(m.Value)}
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

// object is a JSON object that keeps its key order, so transcripts read
// in the order arbor writes.
type object []member

type member struct {
	Key   string
	Value any
}

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshal(m.Key)
		if err != nil {
			return nil, err
		}
		v, err := marshal(m.Value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshal is compact JSON without HTML escaping, so placeholders stay
// readable.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// decodeOrdered decodes one JSON value with objects as ordered objects
// and numbers as json.Number.
func decodeOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	switch d {
	case '{':
		o := object{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			o = append(o, member{k.(string), v})
		}
		_, err := dec.Token()
		return o, err
	case '[':
		a := []any{}
		for dec.More() {
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token()
		return a, err
	}
	return nil, fmt.Errorf("unexpected %v", d)
}

// plain turns ordered objects into maps, for order-free comparison.
func plain(v any) any {
	switch v := v.(type) {
	case object:
		m := make(map[string]any, len(v))
		for _, x := range v {
			m[x.Key] = plain(x.Value)
		}
		return m
	case []any:
		a := make([]any, len(v))
		for i, x := range v {
			a[i] = plain(x)
		}
		return a
	}
	return v
}

// diff lists where got differs from want, one "path: want … got …" each.
func diff(path string, want, got any) []string {
	wm, wok := want.(map[string]any)
	gm, gok := got.(map[string]any)
	if wok && gok {
		var keys []string
		for k := range wm {
			keys = append(keys, k)
		}
		for k := range gm {
			if _, ok := wm[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		var out []string
		for _, k := range keys {
			wv, inW := wm[k]
			gv, inG := gm[k]
			switch {
			case !inW:
				out = append(out, fmt.Sprintf("%s.%s: unexpected, got %s", path, k, show(gv)))
			case !inG:
				out = append(out, fmt.Sprintf("%s.%s: missing, want %s", path, k, show(wv)))
			default:
				out = append(out, diff(path+"."+k, wv, gv)...)
			}
		}
		return out
	}
	wa, wok := want.([]any)
	ga, gok := got.([]any)
	if wok && gok && len(wa) == len(ga) {
		var out []string
		for i := range wa {
			out = append(out, diff(fmt.Sprintf("%s[%d]", path, i), wa[i], ga[i])...)
		}
		return out
	}
	if reflect.DeepEqual(want, got) {
		return nil
	}
	if path == "" {
		path = "."
	}
	return []string{fmt.Sprintf("%s: want %s, got %s", path, show(want), show(got))}
}

func show(v any) string {
	b, err := marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func readTranscript(t *testing.T, path string) []entry {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `go test -run Golden -update` to record it)", err)
	}
	var es []entry
	for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		v, err := decodeOrdered([]byte(line))
		o, ok := v.(object)
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
		line, err := marshal(object{{e.kind, e.value}})
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
