package dialect

import (
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/tool"
)

// ParseQwen reads the flags the Qwen Code SDK passes to its CLI (query()
// builds them from its options: `--input-format stream-json
// --output-format stream-json --channel=SDK`, then --model,
// --system-prompt, --approval-mode, --session-id, …), keeps the ones
// arbor has a meaning for and refuses the rest, naming them (ErrUsage).
// Tool names and rules are qwen's (run_shell_command, grep_search, …) or
// arbor's; they are returned in arbor's.
//
// The SDK sends its external MCP servers (its mcpServers option) in the
// initialize request, its first input line: ParseQwen reads that line
// for them (qwenMCPServers) and returns the input to serve, whole.
func ParseQwen(args []string, in io.Reader) (Launch, io.Reader, error) {
	l, err := parseQwenArgs(args)
	if err != nil {
		return Launch{}, nil, err
	}
	servers, rest, err := qwenMCPServers(in)
	if err != nil {
		return Launch{}, nil, err
	}
	if servers != nil {
		l.MCPServers, l.FromInit.MCPServers = servers, true
	}
	return l, rest, nil
}

// parseQwenArgs reads ParseQwen's argv.
func parseQwenArgs(args []string) (Launch, error) {
	fs := pflag.NewFlagSet("arbor", pflag.ContinueOnError)
	fs.ParseErrorsAllowlist.UnknownFlags = true
	fs.SetOutput(io.Discard)
	var (
		l                                  Launch
		outputFormat, inputFormat, channel string
		coreTools, excludeTools, allowed   []string
		includeDirs, addDirs               []string
		authType                           string
		debug, sandbox, continueFlag       bool
		yolo                               bool
		disabledSlash                      []string
		maxSubagentDepth                   int
		extensions, mcpNames, fallback     []string
		proxy                              string
		safeMode, insecure, worktree       bool
		maxSessionTurns, maxToolCalls      int
		openaiBaseURL, openaiKey, prompts  string
	)
	fs.StringVarP(&outputFormat, "output-format", "o", "", "")
	fs.StringVar(&inputFormat, "input-format", "", "")
	fs.StringVar(&channel, "channel", "", "")
	fs.StringVarP(&l.Model, "model", "m", "", "")
	fs.StringVar(&l.SystemPrompt, "system-prompt", "", "")
	fs.StringVar(&l.AppendSystemPrompt, "append-system-prompt", "", "")
	fs.StringVar(&l.PermissionMode, "approval-mode", "", "")
	fs.BoolVarP(&yolo, "yolo", "y", false, "")
	fs.IntVar(&maxSessionTurns, "max-session-turns", -1, "")
	fs.StringSliceVar(&coreTools, "core-tools", nil, "")
	fs.StringSliceVar(&excludeTools, "exclude-tools", nil, "")
	fs.StringSliceVar(&allowed, "allowed-tools", nil, "")
	fs.StringVar(&authType, "auth-type", "", "")
	fs.BoolVar(&l.PartialMessages, "include-partial-messages", false, "")
	fs.StringVarP(&l.Resume, "resume", "r", "", "")
	fs.BoolVarP(&continueFlag, "continue", "c", false, "")
	fs.StringVar(&l.SessionID, "session-id", "", "")
	fs.BoolVar(&l.ForkSession, "fork-session", false, "")
	fs.IntVar(&maxToolCalls, "max-tool-calls", -1, "")
	fs.StringSliceVar(&includeDirs, "include-directories", nil, "")
	fs.StringSliceVar(&addDirs, "add-dir", nil, "")
	fs.BoolVar(&sandbox, "sandbox", false, "")
	fs.BoolVarP(&debug, "debug", "d", false, "")
	// Options arbor has no counterpart for: declared so that they are
	// refused by name below, not as unknown flags.
	fs.IntVar(&maxSubagentDepth, "max-subagent-depth", 0, "")
	fs.StringSliceVar(&disabledSlash, "disabled-slash-commands", nil, "")
	fs.StringSliceVarP(&extensions, "extensions", "e", nil, "")
	fs.StringSliceVar(&mcpNames, "allowed-mcp-server-names", nil, "")
	fs.StringSliceVar(&fallback, "fallback-model", nil, "")
	fs.StringVar(&proxy, "proxy", "", "")
	fs.BoolVar(&safeMode, "safe-mode", false, "")
	fs.BoolVar(&insecure, "insecure", false, "")
	fs.BoolVar(&worktree, "worktree", false, "")
	fs.StringVar(&openaiBaseURL, "openai-base-url", "", "")
	fs.StringVar(&openaiKey, "openai-api-key", "", "")
	fs.StringVarP(&prompts, "prompt", "p", "", "")
	if err := fs.Parse(args); err != nil {
		return Launch{}, refuse("%v", err)
	}
	if bad := unsupportedFlags(fs, args); len(bad) > 0 {
		return Launch{}, refuse("not supported by arbor, so refused rather than ignored: %s", strings.Join(bad, ", "))
	}
	// The options of query() arbor cannot honour, by the flag that
	// carries each and the option's name.
	for _, f := range []struct{ flag, option, why string }{
		{"max-subagent-depth", "maxSubagentDepth", "arbor's agents spawn child nodes under the tree's own limits"},
		{"extensions", "extensions", "arbor has no qwen extensions"},
		{"allowed-mcp-server-names", "allowedMcpServerNames", "pass the servers to use as mcpServers instead"},
		{"fallback-model", "fallbackModel", "arbor retries the configured model and does not fall back"},
		{"proxy", "proxy", "set HTTPS_PROXY in env instead"},
		{"safe-mode", "safeMode", "arbor has no safe mode"},
		{"insecure", "insecure", "arbor always verifies TLS certificates"},
		{"worktree", "worktree", "use `arbor headless --worktree`"},
		{"disabled-slash-commands", "disabledSlashCommands", "arbor cannot leave out the project's commands and skills"},
		{"openai-base-url", "", "set OPENAI_BASE_URL in env instead"},
		{"openai-api-key", "", "set OPENAI_API_KEY in env instead"},
		{"prompt", "", "the SDK sends its prompt on stdin"},
	} {
		if fs.Changed(f.flag) {
			name := "--" + f.flag
			if f.option != "" {
				name += " (the SDK's " + f.option + ")"
			}
			return Launch{}, refuse("%s: not supported by arbor (%s), so refused rather than ignored", name, f.why)
		}
	}
	if inputFormat != "stream-json" || outputFormat != "stream-json" {
		return Launch{}, refuse("--input-format and --output-format must both be stream-json under qwen's argv (got %q, %q)", inputFormat, outputFormat)
	}
	switch authType {
	case "", "openai":
	case "anthropic":
	default:
		return Launch{}, refuse("--auth-type %s (the SDK's authType): arbor reads its keys from the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY); use openai or anthropic", authType)
	}
	if l.Model == "" && os.Getenv("ARBOR_MODEL") == "" && authType != "anthropic" {
		// The model a qwen user configured, as the qwen CLI reads it.
		l.Model = os.Getenv("OPENAI_MODEL")
	}
	if l.Model != "" && !strings.Contains(l.Model, "/") && !strings.HasPrefix(l.Model, "script:") {
		// qwen names a model of its auth type's provider.
		provider := authType
		if provider == "" {
			provider = "openai"
		}
		l.Model = provider + "/" + l.Model
	}
	if yolo {
		l.PermissionMode = "yolo"
	}
	if l.PermissionMode != "" {
		if _, err := permission.ParseMode(l.PermissionMode); err != nil {
			return Launch{}, refuse("--approval-mode (the SDK's permissionMode): %v", err)
		}
	}
	if maxSessionTurns == 0 || maxSessionTurns < -1 {
		return Launch{}, refuse("--max-session-turns %d: at least 1, or -1 for no limit", maxSessionTurns)
	}
	if maxToolCalls < -1 {
		return Launch{}, refuse("--max-tool-calls %d: at least 0, or -1 for no limit", maxToolCalls)
	}
	l.MaxSessionTurns = max(maxSessionTurns, 0)
	if maxToolCalls >= 0 {
		l.MaxToolCalls = &maxToolCalls // 0 is a cap too: no call may run
	}
	l.Continue = continueFlag
	l.SandboxRequired = sandbox
	l.AddDirs = append(includeDirs, addDirs...)
	if fs.Changed("core-tools") {
		l.Tools = []string{}
		for _, n := range coreTools {
			l.Tools = append(l.Tools, tool.FromQwen(strings.TrimSpace(n)))
		}
	}
	for _, r := range allowed {
		l.AllowedTools = append(l.AllowedTools, tool.RuleFromQwen(r))
	}
	for _, r := range excludeTools {
		l.DisallowedTools = append(l.DisallowedTools, tool.RuleFromQwen(r))
	}
	if l.SessionID != "" && !isUUID(l.SessionID) {
		return Launch{}, refuse("--session-id %q: a session id is a UUID", l.SessionID)
	}
	if l.ForkSession && l.Resume == "" && !l.Continue {
		return Launch{}, refuse("--fork-session needs --resume or --continue")
	}
	return l, nil
}
