// Package golden supports the protocols' golden transcript tests: JSON
// decoded with its key order kept (so a re-recorded transcript reads like
// the wire), compact encoding without HTML escaping, and structural diffs
// that name the path of each difference, and the transcript files
// themselves. It is used by tests only.
package golden

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// Object is a JSON object with its keys in their original order.
type Object []Member

// Member is one key and value of an Object.
type Member struct {
	Key   string
	Value any
}

// MarshalJSON writes the members in order.
func (o Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := Marshal(m.Key)
		if err != nil {
			return nil, err
		}
		v, err := Marshal(m.Value)
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

// Marshal is compact JSON without HTML escaping, so placeholders stay
// readable.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// DecodeOrdered decodes one JSON value with objects as ordered objects
// and numbers as json.Number.
func DecodeOrdered(data []byte) (any, error) {
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
		o := Object{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			o = append(o, Member{k.(string), v})
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

// Plain turns ordered objects into maps, for order-free comparison.
func Plain(v any) any {
	switch v := v.(type) {
	case Object:
		m := make(map[string]any, len(v))
		for _, x := range v {
			m[x.Key] = Plain(x.Value)
		}
		return m
	case []any:
		a := make([]any, len(v))
		for i, x := range v {
			a[i] = Plain(x)
		}
		return a
	}
	return v
}

// Diff lists where got differs from want, one "path: want … got …" each.
func Diff(path string, want, got any) []string {
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
				out = append(out, fmt.Sprintf("%s.%s: unexpected, got %s", path, k, Show(gv)))
			case !inG:
				out = append(out, fmt.Sprintf("%s.%s: missing, want %s", path, k, Show(wv)))
			default:
				out = append(out, Diff(path+"."+k, wv, gv)...)
			}
		}
		return out
	}
	wa, wok := want.([]any)
	ga, gok := got.([]any)
	if wok && gok && len(wa) == len(ga) {
		var out []string
		for i := range wa {
			out = append(out, Diff(fmt.Sprintf("%s[%d]", path, i), wa[i], ga[i])...)
		}
		return out
	}
	if reflect.DeepEqual(want, got) {
		return nil
	}
	if path == "" {
		path = "."
	}
	return []string{fmt.Sprintf("%s: want %s, got %s", path, Show(want), Show(got))}
}

// Show renders v compactly for failure messages.
func Show(v any) string {
	b, err := Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Entry is one line of a golden transcript, an object with one key: Kind
// ("in", "in_raw", "out", "eof", …) and its Value.
type Entry struct {
	Kind  string
	Value any
}

// ReadTranscript reads a transcript file, keeping the key order of every
// object, so recorded input lines are sent as they were recorded.
func ReadTranscript(t testing.TB, path string) []Entry {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `go test -run Golden -update` to record it)", err)
	}
	var es []Entry
	for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		v, err := DecodeOrdered([]byte(line))
		o, ok := v.(Object)
		if err != nil || !ok || len(o) != 1 {
			t.Fatalf("%s:%d: want an object with one key (%v)", path, i+1, err)
		}
		es = append(es, Entry{Kind: o[0].Key, Value: o[0].Value})
	}
	return es
}

// WriteTranscript records es at path, one object per line.
func WriteTranscript(t testing.TB, path string, es []Entry) {
	t.Helper()
	var b bytes.Buffer
	for _, e := range es {
		line, err := Marshal(Object{{Key: e.Kind, Value: e.Value}})
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

// Placeholders maps the values that vary from run to run — ids, the
// test's home directory — to stable placeholders, and back for the input
// lines a replay sends.
type Placeholders struct {
	// Home is written "<home>" in transcripts; "" replaces nothing.
	Home string
	ph   map[string]string // real value → placeholder
	real map[string]string // placeholder → real value
	seq  map[string]int    // per kind
}

// NewPlaceholders returns an empty mapping for a run whose home is home.
func NewPlaceholders(home string) *Placeholders {
	return &Placeholders{Home: home, ph: map[string]string{}, real: map[string]string{}, seq: map[string]int{}}
}

// ID returns v's placeholder "<kind:N>", numbering the values of each kind
// in order of first appearance, so equal values stay equal.
func (p *Placeholders) ID(kind, v string) string {
	if ph, ok := p.ph[v]; ok {
		return ph
	}
	p.seq[kind]++
	ph := fmt.Sprintf("<%s:%d>", kind, p.seq[kind])
	p.ph[v], p.real[ph] = ph, v
	return ph
}

// Known reports whether v already has a placeholder.
func (p *Placeholders) Known(v string) bool {
	_, ok := p.ph[v]
	return ok
}

// HomeOut writes the home directory in s as "<home>".
func (p *Placeholders) HomeOut(s string) string {
	if p.Home == "" {
		return s
	}
	return strings.ReplaceAll(s, p.Home, "<home>")
}

// Restore replaces the placeholders in v, a decoded value, by this run's
// real values.
func (p *Placeholders) Restore(v any) any {
	switch v := v.(type) {
	case Object:
		o := make(Object, len(v))
		for i, m := range v {
			o[i] = Member{Key: m.Key, Value: p.Restore(m.Value)}
		}
		return o
	case []any:
		a := make([]any, len(v))
		for i, x := range v {
			a[i] = p.Restore(x)
		}
		return a
	case string:
		return p.RestoreString(v)
	}
	return v
}

// RestoreString is Restore for one string.
func (p *Placeholders) RestoreString(s string) string {
	if r, ok := p.real[s]; ok {
		return r
	}
	if p.Home == "" {
		return s
	}
	return strings.ReplaceAll(s, "<home>", p.Home)
}
