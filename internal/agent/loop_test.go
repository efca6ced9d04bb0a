package agent

import (
	"encoding/json"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
)

func TestLoopDetectorCounts(t *testing.T) {
	t.Parallel()
	c := func(name, input string) llm.ToolCall {
		return llm.ToolCall{Name: name, Input: json.RawMessage(input)}
	}
	steps := []struct {
		call llm.ToolCall
		want int
	}{
		{c("echo", `{"a":1,"b":2}`), 1},
		{c("echo", `{"a":1,"b":2}`), 2},           // the same bytes
		{c("echo", `{ "b": 2, "a": 1 }`), 3},      // the same once canonicalized
		{c("echo", `{"a":1,"b":3}`), 1},           // other arguments
		{c("echo", `{"b":3,"a":1}`), 2},           // the same as the last, reordered
		{c("grep", `{"b":3,"a":1}`), 1},           // another tool
		{c("grep", `not json`), 1},                // undecodable: compared as written
		{c("grep", ` not json `), 2},              // … without its spaces
		{c("grep", `{"a":1}`), 1},                 // decodable again
		{c("grep", `{"a":1.0}`), 2},               // the same number, written otherwise
		{c("grep", `{"a":2}`), 1},                 // another number
		{c("grep", `{"a":2}`), 2},                 // the same bytes
		{c("echo", `{"a":2}`), 1},                 // another tool, same arguments
		{c("echo", "{\"a\":2}\n"), 2},             // a trailing newline
		{c("echo", `{"a":[1,{"y":1,"x":2}]}`), 1}, // nested
		{c("echo", `{"a":[1,{"x":2,"y":1}]}`), 2}, // nested keys reordered
		{c("echo", `{"a":[{"x":2,"y":1},1]}`), 1}, // array order matters
	}
	d := loopDetector{limit: 3}
	for i, s := range steps {
		if got := d.observe(s.call); got != s.want {
			t.Fatalf("call %d (%s %s): count %d, want %d", i, s.call.Name, s.call.Input, got, s.want)
		}
	}
	d.reset()
	if d.limit != 3 {
		t.Fatalf("reset changed the limit to %d", d.limit)
	}
	if got := d.observe(steps[len(steps)-1].call); got != 1 {
		t.Fatalf("after reset: count %d, want 1", got)
	}
	off := loopDetector{limit: -1}
	for range 3 {
		if got := off.observe(steps[0].call); got != 0 {
			t.Fatalf("detector off: count %d, want 0", got)
		}
	}
}
