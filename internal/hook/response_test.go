package hook_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/hook"
	"github.com/arbor-run/arbor/internal/tool"
)

// ccPostToolUse is testdata/claude-code-post-tool-use.json: what the real
// Claude Code CLI gave a settings file's PostToolUse command hook for
// each call of a session on the project files.
type ccPostToolUse struct {
	Files map[string]string `json:"files"`
	Calls []struct {
		ToolName     string          `json:"tool_name"`
		ToolInput    json.RawMessage `json:"tool_input"`
		ToolResponse map[string]any  `json:"tool_response"`
	} `json:"calls"`
	// MCP is a call of the reference MCP server's echo tool.
	MCP struct {
		ToolName     string          `json:"tool_name"`
		ToolInput    json.RawMessage `json:"tool_input"`
		ToolResponse json.RawMessage `json:"tool_response"`
	} `json:"mcp"`
}

// readRecord reads testdata/claude-code-post-tool-use.json.
func readRecord(t *testing.T) ccPostToolUse {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "claude-code-post-tool-use.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec ccPostToolUse
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// ccInternalFields are fields of Claude Code's tool_response that say
// nothing of the call (its own bookkeeping), left out of the comparison.
var ccInternalFields = []string{"contentNotInModelContext"}

// TestPostToolUseResponseLikeClaudeCode makes the calls Claude Code made
// (Bash, Write, Read, Edit) with arbor's built-ins on the same files,
// with a real PostToolUse command hook that keeps its stdin, and checks
// the hook read the tool_name and tool_response Claude Code gave it:
// whether the tools are presented by Claude Code's names (stream-json's
// Claude Code mode) or by arbor's (a project's hooks in arbor's own front
// ends).
func TestPostToolUseResponseLikeClaudeCode(t *testing.T) {
	t.Parallel()
	rec := readRecord(t)
	for _, named := range []string{"claude-code", "arbor"} {
		t.Run(named, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			for name, text := range rec.Files {
				if err := os.WriteFile(filepath.Join(ws, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			rp := newReplay(t, named, ws, tool.BuiltinOptions{Workspace: ws})
			for i, c := range rec.Calls {
				rp.call(t, i, c.ToolName, json.RawMessage(strings.ReplaceAll(string(c.ToolInput), "<ws>", ws)))
			}
			dump := rp.dump
			seen := readInputs(t, dump)
			if len(seen) != len(rec.Calls) {
				t.Fatalf("the hook ran %d times; want %d", len(seen), len(rec.Calls))
			}
			for i, c := range rec.Calls {
				var got map[string]any
				if err := json.Unmarshal([]byte(strings.ReplaceAll(string(seen[i].ToolResponse), ws, "<ws>")), &got); err != nil {
					t.Fatalf("call %d: tool_response %s is no object: %v", i, seen[i].ToolResponse, err)
				}
				for _, f := range ccInternalFields {
					delete(c.ToolResponse, f)
				}
				if seen[i].ToolName != c.ToolName || !reflect.DeepEqual(got, c.ToolResponse) {
					gb, _ := json.Marshal(got)
					wb, _ := json.Marshal(c.ToolResponse)
					t.Errorf("call %d: the hook read %s\n%s\nClaude Code gave %s\n%s", i, seen[i].ToolName, gb, c.ToolName, wb)
				}
			}
		})
	}
}

// TestPostToolUseResponseOfAnMCPTool: a hook reads an MCP tool's
// tool_response as Claude Code gives it, its content blocks. The tool
// here answers what the reference server's echo answered Claude Code.
func TestPostToolUseResponseOfAnMCPTool(t *testing.T) {
	t.Parallel()
	rec := readRecord(t).MCP
	dir := t.TempDir()
	dump := filepath.Join(dir, "post.jsonl")
	var r hook.Runner
	r.Set(map[hook.Event][]hook.Matcher{hook.PostToolUse: {matcher(t, "mcp__everything__.*",
		&hook.Command{Command: "cat >> " + dump, Dir: dir, ClaudeCode: true})}})
	type args struct {
		Message string `json:"message"`
	}
	echo := tool.New(rec.ToolName, "echo", tool.KindRead, func(_ context.Context, _ tool.Call, a args) tool.Result {
		return tool.Result{Content: "Echo: " + a.Message}
	})
	if res := (&hook.Tool{Tool: echo, Hooks: &r}).Run(t.Context(), tool.Call{ID: "m1", Input: rec.ToolInput}); res.IsError {
		t.Fatal(res.Content)
	}
	seen := readInputs(t, dump)
	var got, want any
	if len(seen) != 1 || json.Unmarshal(seen[0].ToolResponse, &got) != nil || json.Unmarshal(rec.ToolResponse, &want) != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("the hook read %+v; Claude Code gave %s", seen, rec.ToolResponse)
	}
}

// readInputs reads the hook inputs a command appended to path.
func readInputs(t *testing.T, path string) []hook.Input {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []hook.Input
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var in hook.Input
		if err := json.Unmarshal(sc.Bytes(), &in); err != nil {
			t.Fatalf("%s: %v", sc.Bytes(), err)
		}
		out = append(out, in)
	}
	return out
}

// replay runs recorded Claude Code calls with arbor's built-ins, as
// named ("claude-code": the tools under Claude Code's names and inputs;
// "arbor": under arbor's), each wrapped in a PostToolUse hook that
// appends its input to dump.
type replay struct {
	named string
	dump  string
	r     hook.Runner
	tools map[string]tool.Tool
}

func newReplay(t *testing.T, named, ws string, o tool.BuiltinOptions) *replay {
	t.Helper()
	rp := &replay{named: named, dump: filepath.Join(t.TempDir(), "post.jsonl"), tools: map[string]tool.Tool{}}
	rp.r.Set(map[hook.Event][]hook.Matcher{hook.PostToolUse: {matcher(t, "*",
		&hook.Command{Command: "cat >> " + rp.dump + "; echo >> " + rp.dump, Dir: ws, ClaudeCode: true})}})
	for _, bt := range tool.Builtins(o) {
		if named == "claude-code" {
			bt = tool.AsClaudeCode(bt)
		}
		rp.tools[tool.Name(bt)] = bt
	}
	return rp
}

// call runs recorded call i (Claude Code's tool name and input); it must
// succeed.
func (rp *replay) call(t *testing.T, i int, name string, input json.RawMessage) {
	t.Helper()
	if rp.named == "arbor" {
		name = tool.FromClaudeCode(name)
		input = tool.ClaudeCodeInput(name, input)
	}
	bt, ok := rp.tools[name]
	if !ok {
		t.Fatalf("no built-in %s", name)
	}
	res := (&hook.Tool{Tool: bt, Hooks: &rp.r}).Run(t.Context(), tool.Call{ID: "c" + string(rune('a'+i)), Input: input})
	if res.IsError {
		t.Fatalf("call %d (%s %s) failed: %s", i, name, input, res.Content)
	}
}
