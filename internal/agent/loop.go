package agent

import (
	"bytes"
	"encoding/json"

	"github.com/arbor-run/arbor/internal/llm"
)

// loopDetector counts identical consecutive tool calls within one Send:
// the same name, and arguments that are the same once key order and
// spacing are ignored. Arguments are canonicalized only when they differ
// byte for byte from the last call's of the same name, so the usual call
// (a new tool, or new arguments of another length or text) costs a
// comparison, not a decode and an encode; a detector that is off (limit
// ≤ 0) looks at nothing.
type loopDetector struct {
	limit int    // ≤ 0: off
	name  string // the last call's tool
	raw   []byte // and its arguments as the model wrote them
	canon string // raw canonicalized; "" until a comparison needed it
	count int    // how many times in a row that call was made
}

func (d *loopDetector) reset() { *d = loopDetector{limit: d.limit} }

// observe records c and returns how many times in a row it has been made;
// 0 when the detector is off.
func (d *loopDetector) observe(c llm.ToolCall) int {
	if d.limit <= 0 {
		return 0
	}
	if d.count > 0 && c.Name == d.name {
		if bytes.Equal(c.Input, d.raw) {
			d.count++
			return d.count
		}
		if d.canon == "" {
			d.canon = canonicalJSON(d.raw)
		}
		canon := canonicalJSON(c.Input)
		if canon == d.canon {
			d.count++
			return d.count
		}
		d.name, d.raw, d.canon, d.count = c.Name, c.Input, canon, 1
		return 1
	}
	d.name, d.raw, d.canon, d.count = c.Name, c.Input, "", 1
	return 1
}

// canonicalJSON re-encodes raw so that key order and spacing do not matter.
func canonicalJSON(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(bytes.TrimSpace(raw))
	}
	b, _ := json.Marshal(v) // maps marshal with sorted keys
	return string(b)
}
