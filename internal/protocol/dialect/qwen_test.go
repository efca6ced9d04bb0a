package dialect_test

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/protocol/dialect"
)

// sdkArgs is the argv the Qwen Code SDK 0.1.14 builds (ProcessTransport's
// buildCliArguments) before the options' flags.
var qwenSDKArgs = []string{"--input-format", "stream-json", "--output-format", "stream-json", "--channel=SDK"}

func TestRecognize(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want dialect.Dialect
	}{
		{qwenSDKArgs, dialect.Qwen},
		{append(slices.Clone(qwenSDKArgs), "--session-id", "6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b"), dialect.Qwen},
		{[]string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json"}, dialect.ClaudeCode},
		{[]string{"headless", "--protocol", "stream-json"}, dialect.Spec},
		{[]string{"headless", "--input-format", "stream-json", "--output-format", "stream-json"}, dialect.ClaudeCode},
		{[]string{"run", "--input-format", "stream-json", "--output-format", "stream-json", "a goal"}, dialect.Spec},
		{[]string{"mcp", "--input-format", "stream-json", "--output-format", "stream-json", "--channel=SDK"}, dialect.Spec},
		{[]string{"--channel", "SDK"}, dialect.Spec},
	} {
		if got := dialect.Recognize(tt.args); got != tt.want {
			t.Errorf("Recognize(%q) = %s, want %s", tt.args, got, tt.want)
		}
	}
}

func TestParseQwen(t *testing.T) {
	t.Parallel()
	parse := func(t *testing.T, extra ...string) (dialect.Launch, error) {
		t.Helper()
		l, _, err := dialect.ParseQwen(append(slices.Clone(qwenSDKArgs), extra...), strings.NewReader(""))
		return l, err
	}

	t.Run("every option query() maps to a flag", func(t *testing.T) {
		t.Parallel()
		l, err := parse(t, "--model", "qwen-test", "--system-prompt", "You are terse.", "--append-system-prompt", "Be kind.",
			"--approval-mode", "auto", "--max-session-turns", "3", "--core-tools", "run_shell_command,read_file",
			"--exclude-tools", "grep_search", "--allowed-tools", "run_shell_command(git status)", "--auth-type", "openai",
			"--include-partial-messages", "--session-id", "6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b", "--max-tool-calls", "0",
			"--include-directories", "/tmp/a,/tmp/b", "--sandbox")
		if err != nil {
			t.Fatal(err)
		}
		if l.Model != "openai/qwen-test" || l.SystemPrompt != "You are terse." || l.AppendSystemPrompt != "Be kind." ||
			l.PermissionMode != "auto" || l.MaxSessionTurns != 3 || !l.PartialMessages || l.SessionID != "6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b" ||
			l.MaxToolCalls == nil || *l.MaxToolCalls != 0 || !l.SandboxRequired {
			t.Fatalf("launch = %+v", l)
		}
		if strings.Join(l.Tools, ",") != "shell,read_file" || strings.Join(l.DisallowedTools, ",") != "grep" ||
			strings.Join(l.AllowedTools, ",") != "shell(git status)" || strings.Join(l.AddDirs, ",") != "/tmp/a,/tmp/b" {
			t.Fatalf("tools %q, disallowed %q, allowed %q, dirs %q", l.Tools, l.DisallowedTools, l.AllowedTools, l.AddDirs)
		}
	})

	t.Run("no caps by default", func(t *testing.T) {
		t.Parallel()
		l, err := parse(t)
		if err != nil || l.MaxToolCalls != nil || l.MaxSessionTurns != 0 || l.Tools != nil {
			t.Fatalf("launch = %+v, %v", l, err)
		}
	})

	// Each refusal names the flag (and the SDK's option), never ignores it.
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--approval-mode", "sometimes"}, `"sometimes"`},
		{[]string{"--approval-mode", "sometimes"}, "auto-edit"},
		{[]string{"--fallback-model", "a,b"}, "--fallback-model (the SDK's fallbackModel)"},
		{[]string{"--max-subagent-depth", "2"}, "--max-subagent-depth"},
		{[]string{"--disabled-slash-commands", "init"}, "disabledSlashCommands"},
		{[]string{"--proxy", "http://p"}, "--proxy"},
		{[]string{"--auth-type", "qwen-oauth"}, "--auth-type qwen-oauth"},
		{[]string{"--no-such-flag"}, "--no-such-flag"},
		{[]string{"--session-id", "s1"}, "UUID"},
		{[]string{"--fork-session"}, "--fork-session"},
		{[]string{"--max-session-turns", "0"}, "--max-session-turns"},
	} {
		t.Run("refuses "+strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			_, err := parse(t, tt.args...)
			if !errors.Is(err, dialect.ErrUsage) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a usage error containing %s", err, tt.want)
			}
		})
	}
}

func TestParseClaudeCodeAddDir(t *testing.T) {
	t.Parallel()
	l, _, err := dialect.ParseClaudeCode([]string{"--output-format", "stream-json", "--input-format", "stream-json", "--add-dir", "/tmp/a", "--add-dir=/tmp/b"}, strings.NewReader(""))
	if err != nil || strings.Join(l.AddDirs, ",") != "/tmp/a,/tmp/b" {
		t.Fatalf("add dirs %q, %v", l.AddDirs, err)
	}
}

// TestParseQwenMCPServers: the SDK's external MCP servers come in its
// first line, the initialize request; they are read at launch, and the
// input is served whole.
func TestParseQwenMCPServers(t *testing.T) {
	t.Parallel()
	read := func(t *testing.T, in string) (dialect.Launch, string, error) {
		t.Helper()
		l, rest, err := dialect.ParseQwen(qwenSDKArgs, strings.NewReader(in))
		if err != nil {
			return l, "", err
		}
		b, _ := io.ReadAll(rest)
		return l, string(b), nil
	}
	init := `{"type":"control_request","request_id":"r1","request":{"subtype":"initialize","hooks":null,"mcpServers":{"files":{"command":"node","args":["s.mjs"],"env":{"A":"1"}},"web":{"httpUrl":"http://127.0.0.1:1/mcp","headers":{"X":"y"}},"old":{"url":"http://127.0.0.1:1/sse"}}}}` + "\n"
	l, rest, err := read(t, init+`{"type":"user"}`+"\n")
	if err != nil {
		t.Fatal(err)
	}
	if rest != init+`{"type":"user"}`+"\n" {
		t.Fatalf("input served = %q, want it whole", rest)
	}
	if !l.FromInit.MCPServers || l.MCPServers["files"].Command != "node" || l.MCPServers["files"].Transport() != "stdio" ||
		l.MCPServers["web"].Transport() != "http" || l.MCPServers["web"].URL != "http://127.0.0.1:1/mcp" || l.MCPServers["old"].Transport() != "sse" {
		t.Fatalf("servers = %+v", l.MCPServers)
	}

	for _, in := range []string{"", `{"type":"user"}` + "\n", `{"type":"control_request","request":{"subtype":"initialize"}}` + "\n"} {
		l, rest, err := read(t, in)
		if err != nil || l.MCPServers != nil || rest != in {
			t.Fatalf("input %q: servers %v, served %q, %v; want no servers and the input whole", in, l.MCPServers, rest, err)
		}
	}

	_, _, err = read(t, `{"type":"control_request","request":{"subtype":"initialize","mcpServers":{"x":{"command":"n","trust":true,"includeTools":["a"]}}}}`+"\n")
	if !errors.Is(err, dialect.ErrUsage) || !strings.Contains(err.Error(), "includeTools, trust") || !strings.Contains(err.Error(), "mcpServers.x") {
		t.Fatalf("err = %v; want a usage error naming the server and its fields arbor does not take", err)
	}
}
