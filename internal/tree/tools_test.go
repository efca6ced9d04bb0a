package tree

import "testing"

// TestToolsIdempotentByDeclaration pins which tree tools the agent runs
// again after a crash: the ones declared tool.Idempotent, wherever they
// sit in the list.
func TestToolsIdempotentByDeclaration(t *testing.T) {
	t.Parallel()
	want := map[string]bool{
		"spawn": true, "fork": true, "ask": true, "complete": true, "read_tree": true, "read_node": true,
		"stop": false, "pause": false, "resume": false, "modify": false, "notify": false,
	}
	seen := map[string]bool{}
	for _, tl := range (&run{e: &Engine{}}).tools(2) {
		info := tl.Info()
		w, ok := want[info.Name]
		if !ok {
			t.Fatalf("unexpected tree tool %q: add it to this test with its idempotency", info.Name)
		}
		if info.Idempotent != w {
			t.Errorf("%s: Idempotent = %v, want %v", info.Name, info.Idempotent, w)
		}
		seen[info.Name] = true
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("a child node has no %s tool", name)
		}
	}
}
