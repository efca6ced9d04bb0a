package tool

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestBound: tools bound from one Bound run with their own value and
// describe themselves as New's tool of the same arguments does.
func TestBound(t *testing.T) {
	type args struct {
		Text string `json:"text"`
	}
	run := func(_ context.Context, c Call, b int64, a args) Result {
		if a.Text == "panic" {
			panic("boom")
		}
		return Result{Content: strings.Repeat(a.Text, int(b)) + " " + c.ID}
	}
	bt := NewBound("echo", "Echo it.", KindRead, run)
	two, three := bt.Bind(2), bt.Bind(3)
	want := New("echo", "Echo it.", KindRead, func(ctx context.Context, c Call, a args) Result { return run(ctx, c, 2, a) })
	if got, w := two.Info(), want.Info(); got.Name != w.Name || got.Description != w.Description ||
		got.Kind != w.Kind || string(got.Schema) != string(w.Schema) || got.Idempotent {
		t.Errorf("Info = %+v, want %+v", got, w)
	}
	if Name(three) != "echo" {
		t.Errorf("Name = %q", Name(three))
	}
	in := json.RawMessage(`{"text":"ab"}`)
	if got := two.Run(context.Background(), Call{ID: "c1", Input: in}); got.Content != "abab c1" || got.IsError {
		t.Errorf("bound to 2: %+v", got)
	}
	if got := three.Run(context.Background(), Call{ID: "c2", Input: in}); got.Content != "ababab c2" {
		t.Errorf("bound to 3: %+v", got)
	}
	bad := json.RawMessage(`{"text":1,"more":true}`)
	if got, w := two.Run(context.Background(), Call{Input: bad}), want.Run(context.Background(), Call{Input: bad}); got.Content != w.Content || !got.IsError {
		t.Errorf("bad input: %+v, New's tool %+v", got, w)
	}
	if got := two.Run(context.Background(), Call{Input: json.RawMessage(`{"text":"panic"}`)}); !got.IsError || !strings.Contains(got.Content, "boom") {
		t.Errorf("a panic: %+v", got)
	}
	if _, err := two.Target(bad); err == nil {
		t.Error("Target of bad input: no error")
	}
	if !NewBound("idem", "", KindRead, run).Idempotent().Bind(1).Info().Idempotent {
		t.Error("Idempotent: not marked")
	}
}
