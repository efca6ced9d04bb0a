package envelope

import "testing"

// TestSubAgentErrorOncePerFailure: a node the tree retries after a
// failure fails alike; its error is pushed once, a different one again.
func TestSubAgentErrorOncePerFailure(t *testing.T) {
	t.Parallel()
	a := newSubAgents()
	for i, c := range []struct {
		task, msg string
		want      bool
	}{
		{"S.2", "model call to x: 500", true},
		{"S.2", "model call to x: 500", false}, // the retry failed alike
		{"S.3", "model call to x: 500", true},  // another task
		{"S.2", "model call to x: 429", true},  // another failure
		{"S.2", "model call to x: 500", true},
	} {
		if got := a.newError(c.task, c.msg); got != c.want {
			t.Fatalf("step %d: newError(%q, %q) = %v, want %v", i, c.task, c.msg, got, c.want)
		}
	}
}
