package llm

import (
	"encoding/json"
	"testing"
)

// TestHeadCache: a head is encoded again when the key or a tool differs,
// also when the caller changed a tool's schema in place after the head
// was kept, and not otherwise; a nil cache encodes every time; what Get
// returns is the caller's to append to.
func TestHeadCache(t *testing.T) {
	encodes := 0
	encode := func(s string) func() ([]byte, error) {
		return func() ([]byte, error) { encodes++; return []byte(s), nil }
	}
	schema := json.RawMessage(`{"type":"object"}`)
	tools := []ToolSpec{{Name: "t", Description: "d", InputSchema: schema}}
	c := new(HeadCache[string])
	steps := []struct {
		key, want string
		tools     []ToolSpec
		encoded   bool
	}{
		{"a", "A", tools, true},
		{"a", "A", tools, false},
		{"b", "B", tools, true},
		{"b", "B", []ToolSpec{{Name: "t", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`)}}, false},
		{"b", "C", []ToolSpec{{Name: "t", Description: "other", InputSchema: schema}}, true},
		{"b", "D", nil, true},
	}
	for i, s := range steps {
		before := encodes
		got, err := c.Get(s.key, s.tools, encode(s.want))
		if err != nil || string(got) != s.want || (encodes > before) != s.encoded {
			t.Fatalf("step %d: %q, %v, encoded %v; want %q, encoded %v", i, got, err, encodes > before, s.want, s.encoded)
		}
		_ = append(got, '!') // must not write into the kept head
	}
	if got, _ := c.Get("b", nil, encode("E")); string(got) != "D" {
		t.Fatalf("the kept head was written into: %q", got)
	}
	c.Get("s", tools, encode("S"))
	schema[2] = 'T' // the caller reuses its slice
	if got, _ := c.Get("s", tools, encode("S2")); string(got) != "S2" {
		t.Fatalf("a schema changed in place was taken for the kept one: %q", got)
	}
	var none *HeadCache[string]
	before := encodes
	none.Get("a", tools, encode("A"))
	none.Get("a", tools, encode("A"))
	if encodes-before != 2 || none.Sizes() != nil {
		t.Fatalf("a nil cache kept something: %d encodes, sizes %v", encodes-before, none.Sizes())
	}
}
