package treetest

import (
	"strings"
	"testing"
)

// Authority and dependency rules, as one table run against every front
// end of the tree tools: the in-process tools of node agents and the MCP
// server (root and node mode). A front end supplies CallFunc; RunAuthority
// builds the tree below through it and checks every case.
//
// The tree, in a hosted run (#1 is the host):
//
//	#1 host
//	  #2 ask "hold?"           never answered, so nothing below starts
//	  #3 spawn A               blocked_by #2
//	    #5 spawn A1            blocked_by #2
//	  #4 spawn B               blocked_by #2
//	    #6 spawn B1            blocked_by #3

// CallFunc calls tool name with args as node caller and returns the
// result's text and whether it is an error.
type CallFunc func(t *testing.T, caller int64, name string, args map[string]any) (text string, isErr bool)

// AuthorityStep is a call that builds the tree; it must succeed.
type AuthorityStep struct {
	Caller int64
	Tool   string
	Args   map[string]any
}

// AuthorityCase is one call and what it must give.
type AuthorityCase struct {
	Name   string
	Caller int64
	Tool   string
	Args   map[string]any
	// WantErr says the call is refused; Want is text its result contains.
	WantErr bool
	Want    string
}

// AuthoritySteps build the tree the cases assume.
var AuthoritySteps = []AuthorityStep{
	{1, "ask", map[string]any{"question": "hold?"}},
	{1, "spawn", map[string]any{"goal": "A", "prompt": "a", "blocked_by": []string{"#2"}}},
	{1, "spawn", map[string]any{"goal": "B", "prompt": "b", "blocked_by": []string{"#2"}}},
	{3, "spawn", map[string]any{"goal": "A1", "prompt": "a1", "blocked_by": []string{"#2"}}},
	{4, "spawn", map[string]any{"goal": "B1", "prompt": "b1", "blocked_by": []string{"#3"}}},
}

// AuthorityCases run in order after AuthoritySteps: refusals first, then
// calls that change the tree.
var AuthorityCases = []AuthorityCase{
	{Name: "stop a sibling", Caller: 3, Tool: "stop", Args: map[string]any{"id": "#4"}, WantErr: true, Want: "not in your subtree"},
	{Name: "stop a parent", Caller: 3, Tool: "stop", Args: map[string]any{"id": "#1"}, WantErr: true, Want: "not in your subtree"},
	{Name: "stop itself", Caller: 3, Tool: "stop", Args: map[string]any{"id": "#3"}, WantErr: true, Want: "not in your subtree"},
	{Name: "pause a cousin", Caller: 3, Tool: "pause", Args: map[string]any{"id": "#6"}, WantErr: true, Want: "not in your subtree"},
	{Name: "modify a parent", Caller: 5, Tool: "modify", Args: map[string]any{"id": "#3", "goal": "x"}, WantErr: true, Want: "not in your subtree"},
	{Name: "resume outside", Caller: 5, Tool: "resume", Args: map[string]any{"id": "#4"}, WantErr: true, Want: "not in your subtree"},
	{Name: "stop an unknown node", Caller: 3, Tool: "stop", Args: map[string]any{"id": "#99"}, WantErr: true, Want: "does not exist"},
	{Name: "blocked_by an unknown node", Caller: 3, Tool: "spawn", Args: map[string]any{"goal": "x", "prompt": "x", "blocked_by": []string{"#99"}}, WantErr: true, Want: "#99 does not exist"},
	{Name: "blocked_by itself", Caller: 3, Tool: "spawn", Args: map[string]any{"goal": "x", "prompt": "x", "blocked_by": []string{"#3"}}, WantErr: true, Want: "ancestor"},
	{Name: "blocked_by an ancestor", Caller: 5, Tool: "fork", Args: map[string]any{"goal": "x", "prompt": "x", "blocked_by": []string{"#1"}}, WantErr: true, Want: "ancestor"},
	{Name: "blocked_by twice", Caller: 3, Tool: "spawn", Args: map[string]any{"goal": "x", "prompt": "x", "blocked_by": []string{"#2", "#2"}}, WantErr: true, Want: "listed twice"},
	{Name: "blocked_by closing a cycle", Caller: 3, Tool: "spawn", Args: map[string]any{"goal": "x", "prompt": "x", "blocked_by": []string{"#4"}}, WantErr: true, Want: "cycle"},
	{Name: "ask blocked_by closing a cycle", Caller: 3, Tool: "ask", Args: map[string]any{"question": "x?", "blocked_by": []string{"#6"}}, WantErr: true, Want: "cycle"},
	{Name: "empty goal", Caller: 3, Tool: "spawn", Args: map[string]any{"goal": " ", "prompt": "x"}, WantErr: true, Want: "goal must not be empty"},
	{Name: "a bad node id", Caller: 3, Tool: "stop", Args: map[string]any{"id": "three"}, WantErr: true, Want: "#3"},
	{Name: "complete while not running", Caller: 5, Tool: "complete", Args: map[string]any{"result": "r"}, WantErr: true, Want: "complete is only for a running node"},
	{Name: "read a node anywhere", Caller: 5, Tool: "read_node", Args: map[string]any{"id": "#4"}, Want: "goal: B"},
	{Name: "read the whole tree", Caller: 6, Tool: "read_tree", Want: "#6 [pending] spawn: B1"},
	{Name: "pause its child", Caller: 3, Tool: "pause", Args: map[string]any{"id": "#5"}, Want: "#5 is now paused"},
	{Name: "pause it again", Caller: 3, Tool: "pause", Args: map[string]any{"id": "#5"}, WantErr: true, Want: "already paused"},
	{Name: "modify its paused child", Caller: 3, Tool: "modify", Args: map[string]any{"id": "#5", "prompt": "new"}, Want: "#5 is now paused"},
	{Name: "resume its child", Caller: 3, Tool: "resume", Args: map[string]any{"id": "#5"}, Want: "#5 is now pending"},
	{Name: "stop a grandchild", Caller: 1, Tool: "stop", Args: map[string]any{"id": "#6"}, Want: "#6 is now cancelled"},
	{Name: "stop it again", Caller: 4, Tool: "stop", Args: map[string]any{"id": "#6"}, WantErr: true, Want: "already cancelled"},
	{Name: "modify a cancelled node", Caller: 4, Tool: "modify", Args: map[string]any{"id": "#6", "goal": "y"}, WantErr: true, Want: "only pending or paused"},
	{Name: "blocked_by a cousin once the cycle is gone", Caller: 3, Tool: "spawn", Args: map[string]any{"goal": "A2", "prompt": "x", "blocked_by": []string{"#4"}}, Want: `"#7"`},
	{Name: "the new child is its own", Caller: 3, Tool: "stop", Args: map[string]any{"id": "#7"}, Want: "#7 is now cancelled"},
}

// RunAuthority builds the tree through call and checks every case.
func RunAuthority(t *testing.T, call CallFunc) {
	t.Helper()
	for _, s := range AuthoritySteps {
		if text, isErr := call(t, s.Caller, s.Tool, s.Args); isErr {
			t.Fatalf("setup: #%d %s: %s", s.Caller, s.Tool, text)
		}
	}
	for _, c := range AuthorityCases {
		text, isErr := call(t, c.Caller, c.Tool, c.Args)
		if isErr != c.WantErr || !strings.Contains(text, c.Want) {
			t.Errorf("%s: #%d %s %v = %q (error %v), want error %v containing %q", c.Name, c.Caller, c.Tool, c.Args, text, isErr, c.WantErr, c.Want)
		}
	}
}
