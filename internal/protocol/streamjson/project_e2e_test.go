//go:build unix

package streamjson_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// The project-files flows run arbor and the real Claude Code CLI on the
// same project folder (CLAUDE.md, .claude/settings.json with a hook
// script and a deny rule) against the same scripted model, and check the
// same outcome in both: the CLAUDE.md text is in the model's request,
// the hook blocks the Bash call with its stderr, the deny rule denies it
// under bypassPermissions. The real CLI's transcripts are recorded in
// testdata/project-golden (ARBOR_RECORD_CLAUDE_CODE=1 runs it again and
// rewrites them); without recording, the test checks the recorded ones
// still say what arbor's run says.

const projectGoldenDir = "testdata/project-golden"

// projectMarker is CLAUDE.md's text; the model's request must carry it.
const projectMarker = "PROJECT-RULE-7f3: answer every question in one haiku."

type projectFlow struct {
	name  string
	files map[string]string
	// mode is --permission-mode; args are more flags.
	mode string
	args []string
	// command is the Bash call the model makes ("" = none).
	command string
	// skill is the skill the model loads with Claude Code's Skill tool
	// ("" = none).
	skill string
	// then is a second prompt, sent once the first has its result ("" =
	// none).
	then string
	// check asserts on one CLI's outcome, the same for both.
	check func(t *testing.T, o projectOutcome)
}

// projectOutcome is what a flow's run shows: where the first model
// request carried CLAUDE.md's text (Claude Code: in a user message's
// system reminder; arbor: in the system prompt) and the text around it,
// the tool result the model read back, and whether the victim file
// survived.
type projectOutcome struct {
	MarkerIn   string `json:"marker_in"` // system, messages or ""
	MarkerText string `json:"marker_text"`
	// Asked: the model was asked the flow's prompt.
	Asked       bool   `json:"asked"`
	ToolResult  string `json:"tool_result"`
	ToolIsError bool   `json:"tool_is_error"`
	// SkillBodyNext: the request after the tool call carries the
	// skill's body.
	SkillBodyNext bool     `json:"skill_body_next"`
	VictimKept    bool     `json:"victim_kept"`
	Stdout        []string `json:"stdout"`
}

const blockHook = `#!/bin/sh
input=$(cat)
case "$input" in
*'"rm '*) echo "HOOK-BLOCKED: rm is not allowed in this project" >&2; exit 2 ;;
esac
exit 0
`

const askHook = `#!/bin/sh
cat >/dev/null
echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"HOOK-ASKS: removing files needs a look"}}'
`

var projectFlows = []projectFlow{
	// A settings file's env reaches the commands (a number as its text,
	// the local file's value over the project file's) and the hooks.
	{name: "settings-env", mode: "bypassPermissions", command: `echo "marker=$PROJECT_ENV_MARKER num=$NUM flag=$FLAG literal=$LITERAL over=$OVER"`,
		files: map[string]string{
			".claude/settings.json":       `{"env": {"PROJECT_ENV_MARKER": "env-9d2", "NUM": 5, "FLAG": true, "LITERAL": "$HOME/x", "OVER": "project"}}`,
			".claude/settings.local.json": `{"env": {"OVER": "local"}}`,
		},
		check: func(t *testing.T, o projectOutcome) {
			if want := "marker=env-9d2 num=5 flag=true literal=$HOME/x over=local"; o.ToolIsError || !strings.Contains(o.ToolResult, want) {
				t.Errorf("the command did not get the settings' env: tool result %q, want %q", o.ToolResult, want)
			}
		}},
	{name: "settings-env-hook", mode: "bypassPermissions", command: "rm -f victim.txt",
		files: map[string]string{
			".claude/hooks/env.sh":  "#!/bin/sh\ncat >/dev/null\necho \"HOOK-SEES=$PROJECT_ENV_MARKER\" >&2\nexit 2\n",
			".claude/settings.json": `{"env": {"PROJECT_ENV_MARKER": "env-9d2"}, "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/env.sh"}]}]}}`,
		},
		check: func(t *testing.T, o projectOutcome) {
			if !o.VictimKept || !strings.Contains(o.ToolResult, "HOOK-SEES=env-9d2") {
				t.Errorf("the hook did not get the settings' env: victim kept %v, tool result %q", o.VictimKept, o.ToolResult)
			}
		}},
	{name: "skill", skill: "release-notes",
		files: map[string]string{".claude/skills/release-notes/SKILL.md": "---\nname: release-notes\ndescription: Write the release notes of a version.\n---\nSKILL-BODY-42: list every merged change under its heading.\n"},
		check: func(t *testing.T, o projectOutcome) {
			init := initLine(t, o.Stdout)
			if !listed(init["skills"], "release-notes") || !listed(init["slash_commands"], "release-notes") || !listed(init["tools"], "Skill") {
				t.Errorf("system/init does not list the skill and the Skill tool: skills %v, slash_commands %v, tools %v", init["skills"], init["slash_commands"], init["tools"])
			}
			if o.ToolIsError || !o.SkillBodyNext {
				t.Errorf("the skill's body did not reach the next request (tool result %q)", o.ToolResult)
			}
		}},
	{name: "claude-md", files: map[string]string{"CLAUDE.md": projectMarker + "\n"},
		check: func(t *testing.T, o projectOutcome) {
			if o.MarkerIn == "" || !strings.Contains(o.MarkerText, projectMarker) {
				t.Errorf("the first model request lacks CLAUDE.md's text (in %q: %q)", o.MarkerIn, o.MarkerText)
			}
		}},
	// The Claude Agent SDK's settingSources: [] reads no project file.
	{name: "no-setting-sources", files: map[string]string{"CLAUDE.md": projectMarker + "\n"}, args: []string{"--setting-sources", ""},
		check: func(t *testing.T, o projectOutcome) {
			if o.MarkerIn != "" || !o.Asked {
				t.Errorf("CLAUDE.md reached the request (in %q; the model asked: %v) under --setting-sources \"\"", o.MarkerIn, o.Asked)
			}
		}},
	{name: "hook-blocks", mode: "bypassPermissions", command: "rm -f victim.txt",
		files: map[string]string{
			".claude/hooks/block.sh": blockHook,
			".claude/settings.json":  `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/block.sh"}]}]}}`,
		},
		check: func(t *testing.T, o projectOutcome) {
			if !o.VictimKept || !strings.Contains(o.ToolResult, "HOOK-BLOCKED: rm is not allowed in this project") {
				t.Errorf("the hook did not block the call: victim kept %v, tool result %q", o.VictimKept, o.ToolResult)
			}
		}},
	// Claude Code's deny rules see a command run through xargs.
	{name: "deny-rule-xargs", mode: "bypassPermissions", command: "echo victim.txt | xargs rm -f",
		files: map[string]string{".claude/settings.json": `{"permissions": {"deny": ["Bash(rm:*)"]}}`},
		check: func(t *testing.T, o projectOutcome) {
			if !o.VictimKept || !o.ToolIsError {
				t.Errorf("the deny rule did not deny xargs rm under bypassPermissions: victim kept %v, tool result %q", o.VictimKept, o.ToolResult)
			}
		}},
	// A PreToolUse hook's "ask" asks even under bypassPermissions; with
	// no one to ask (no permission prompt tool), the call is refused.
	{name: "hook-asks", mode: "bypassPermissions", command: "rm -f victim.txt",
		files: map[string]string{
			".claude/hooks/ask.sh":  askHook,
			".claude/settings.json": `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/ask.sh"}]}]}}`,
		},
		check: func(t *testing.T, o projectOutcome) {
			if !o.VictimKept || !o.ToolIsError {
				t.Errorf("the hook's ask did not stop the call under bypassPermissions: victim kept %v, tool result %q", o.VictimKept, o.ToolResult)
			}
		}},
	{name: "deny-rule", mode: "bypassPermissions", command: "rm -f victim.txt",
		files: map[string]string{".claude/settings.json": `{"permissions": {"deny": ["Bash(rm:*)"]}}`},
		check: func(t *testing.T, o projectOutcome) {
			if !o.VictimKept || !o.ToolIsError {
				t.Errorf("the deny rule did not deny the call under bypassPermissions: victim kept %v, tool result %q", o.VictimKept, o.ToolResult)
			}
		}},
}

// initLine is the stdout's system/init line.
func initLine(t *testing.T, stdout []string) map[string]any {
	t.Helper()
	for _, l := range stdout {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["type"] == "system" && m["subtype"] == "init" {
			return m
		}
	}
	t.Fatal("no system/init line")
	return nil
}

func listed(v any, name string) bool {
	l, _ := v.([]any)
	for _, x := range l {
		if x == name {
			return true
		}
	}
	return false
}

func TestProjectFilesLikeClaudeCode(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "arbor")
	runCmd(t, ".", "go", "build", "-o", bin, "../../../cmd/arbor")
	var real string
	if os.Getenv(recordEnv) == "1" {
		real = realClaudeCode(t)
	}
	for _, f := range append(projectFlows, hookFlows...) {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(projectGoldenDir, f.name+".json")
			if real != "" {
				env := realCLIEnv()
				env["IS_SANDBOX"] = "1" // bypassPermissions as root, as in a container
				o := f.play(t, real, env)
				b, _ := json.MarshalIndent(o, "", "  ")
				if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("the reference transcript: %v (record it with %s=1)", err, recordEnv)
			}
			var ref projectOutcome
			if err := json.Unmarshal(b, &ref); err != nil {
				t.Fatal(err)
			}
			t.Run("claude-code", func(t *testing.T) { f.check(t, ref) })
			t.Run("arbor", func(t *testing.T) {
				o := f.play(t, bin, nil)
				f.check(t, o)
				if t.Failed() {
					t.Logf("arbor's stdout:\n%s", strings.Join(o.Stdout, "\n"))
				}
			})
		})
	}
}

// play runs the flow's project with bin (Claude Code's argv) and returns
// what it showed.
func (f projectFlow) play(t *testing.T, bin string, env map[string]string) projectOutcome {
	t.Helper()
	home := t.TempDir()
	ws := filepath.Join(home, "workspace")
	files := map[string]string{".git/HEAD": "ref: refs/heads/main\n", "victim.txt": "keep me\n"}
	for k, v := range f.files {
		files[k] = v
	}
	for p, c := range files {
		full := filepath.Join(ws, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(p, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(full, []byte(c), mode); err != nil {
			t.Fatal(err)
		}
	}
	// The model answers by what it is asked, so a side request the CLI
	// makes (a title, a summary) takes no scripted turn from the flow.
	srv := llmtest.NewServerFunc(func(r llmtest.Request) llmtest.Turn {
		if hasToolResult(r) {
			return llmtest.Turn{Text: "done", Usage: ccUsage}
		}
		if f.skill != "" && offersTool(r, "Skill") && strings.Contains(r.LastUserText(), "Run it") {
			return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "toolu_p2", Name: "Skill", Input: map[string]any{"skill": f.skill}}}, Usage: ccUsage}
		}
		if f.command != "" && offersTool(r, "Bash") && strings.Contains(r.LastUserText(), "Run it") {
			return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "toolu_p1", Name: "Bash",
				Input: map[string]any{"command": f.command, "description": "Remove victim.txt"}}}, Usage: ccUsage}
		}
		return llmtest.Turn{Text: "ok", Usage: ccUsage}
	})
	defer srv.Close()
	vars := map[string]string{"PATH": os.Getenv("PATH"), "HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "config"),
		"XDG_STATE_HOME": filepath.Join(home, "state"), "ANTHROPIC_BASE_URL": srv.URL, "ANTHROPIC_API_KEY": "test-key-123",
		"ARBOR_MODEL": sdkModel}
	for k, v := range env {
		if v == "" {
			delete(vars, k)
		} else {
			vars[k] = v
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // hang guard
	defer cancel()
	// Claude Code's stream-json argv, as the Claude Agent SDK launches
	// it: one user line in, stdin closed once the result is out.
	args := []string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json"}
	if f.mode != "" {
		args = append(args, "--permission-mode", f.mode)
	}
	args = append(args, f.args...)
	c := exec.CommandContext(ctx, bin, args...)
	c.Dir = ws
	for k, v := range vars {
		c.Env = append(c.Env, k+"="+v)
	}
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = 10 * time.Second
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(stdin, `{"type":"user","message":{"role":"user","content":"Run it"},"parent_tool_use_id":null,"session_id":""}`+"\n")
	var lines []string
	results := 0
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		var m struct {
			Type      string `json:"type"`
			RequestID string `json:"request_id"`
			Request   struct {
				Subtype string `json:"subtype"`
			} `json:"request"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		switch {
		case m.Type == "result" && results == 0 && f.then != "":
			results++
			b, _ := json.Marshal(f.then)
			_, _ = io.WriteString(stdin, `{"type":"user","message":{"role":"user","content":`+string(b)+`},"parent_tool_use_id":null,"session_id":""}`+"\n")
		case m.Type == "result":
			stdin.Close()
		case m.Type == "control_request" && m.Request.Subtype == "can_use_tool":
			// The Claude Agent SDK's answer without a canUseTool callback.
			_, _ = io.WriteString(stdin, `{"type":"control_response","response":{"subtype":"error","request_id":"`+m.RequestID+`","error":"canUseTool callback is not provided."}}`+"\n")
		}
	}
	stdin.Close()
	if err := c.Wait(); err != nil || ctx.Err() != nil {
		t.Fatalf("%s: %v (hang guard: %v)\nstdout:\n%s\nstderr:\n%s", filepath.Base(bin), err, ctx.Err(), strings.Join(lines, "\n"), stderr.String())
	}
	var o projectOutcome
	first := true
	for _, r := range srv.Requests() {
		if first && hasUserText(r, "Run it") { // the flow's first request, not a side one
			first, o.Asked = false, true
			var msgs strings.Builder
			for _, m := range r.Messages {
				msgs.WriteString(m.Text() + "\n")
			}
			for _, in := range []struct{ where, text string }{{"system", r.System}, {"messages", msgs.String()}} {
				text := strings.ReplaceAll(in.text, home, "<home>")
				if i := strings.Index(text, "PROJECT-RULE-7f3"); i >= 0 {
					o.MarkerIn, o.MarkerText = in.where, text[max(0, i-80):min(len(text), i+120)]
					break
				}
			}
		}
		for _, m := range r.Messages {
			for _, p := range m.Parts {
				if p.Type == llm.PartToolResult && p.ToolResult != nil && bytes.Contains(r.Body, []byte("SKILL-BODY-42")) {
					o.SkillBodyNext = true
				}
				if p.Type == llm.PartToolResult && p.ToolResult != nil {
					o.ToolResult, o.ToolIsError = strings.ReplaceAll(p.ToolResult.Content, home, "<home>"), p.ToolResult.IsError
				}
			}
		}
	}
	for _, l := range lines {
		o.Stdout = append(o.Stdout, strings.ReplaceAll(l, home, "<home>"))
	}
	_, err = os.Stat(filepath.Join(ws, "victim.txt"))
	o.VictimKept = err == nil
	return o
}

func hasToolResult(r llmtest.Request) bool {
	if len(r.Messages) == 0 {
		return false
	}
	for _, p := range r.Messages[len(r.Messages)-1].Parts {
		if p.Type == llm.PartToolResult {
			return true
		}
	}
	return false
}

func offersTool(r llmtest.Request, name string) bool {
	for _, s := range r.Tools {
		if s.Name == name {
			return true
		}
	}
	return false
}

func hasUserText(r llmtest.Request, text string) bool {
	for _, m := range r.Messages {
		if m.Role == llm.RoleUser && strings.Contains(m.Text(), text) {
			return true
		}
	}
	return false
}
