package streamjson_test

// The golden transcripts' normalization, key-order-preserving JSON and
// diffs; the format and the replay are in golden_test.go.

import (
	"encoding/json"
	"regexp"
	"sort"

	"github.com/arbor-run/arbor/internal/protocol/golden"
)

// normalizer maps varying values to stable placeholders and back.
type normalizer struct{ *golden.Placeholders }

func newNormalizer() *normalizer { return &normalizer{golden.NewPlaceholders("")} }

// idPattern matches the ids the model server and arbor mint for messages
// and tool calls.
var idPattern = regexp.MustCompile(`^(msg|toolu|call|chatcmpl)[_-][A-Za-z0-9_-]{8,}$`)

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
			return n.ID("session", v)
		case idPattern.MatchString(v):
			return n.ID(idPattern.FindStringSubmatch(v)[1], v)
		default:
			return n.HomeOut(v)
		}
	}
	return v
}
