package dialect

import (
	"fmt"
	"io"
	"maps"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/tool"
)

// Launch is what a client's argv asks of arbor, in arbor's terms (Claude
// Code's, ParseClaudeCode, or qwen's, ParseQwen).
type Launch struct {
	Model          string
	PermissionMode string // as given: arbor's mode names and Claude's are both taken
	MaxTurns       int
	// AllowedTools and DisallowedTools are rules in arbor's syntax
	// (tool.RuleFromClaudeCode), from the flags and, for disallowed
	// tools, the initialize request under --await-initialize.
	AllowedTools, DisallowedTools []string
	// Tools is --tools: nil for the default set, empty for none.
	Tools              []string
	AppendSystemPrompt string
	Resume, SessionID  string
	Continue           bool
	ForkSession        bool
	PartialMessages    bool
	MaxBudgetUSD       float64
	// MCPServers are those of --mcp-config (and of the initialize
	// request); StrictMCP ignores the configured ones.
	MCPServers map[string]config.MCPServer
	StrictMCP  bool
	// Sandbox is the SDK's sandbox option (--settings, or the initialize
	// request's settings); nil when not given.
	Sandbox *SandboxSettings
	// SettingSources is --setting-sources: which of the project's and the
	// user's files arbor reads (user, project, local; see package
	// project); nil when the flag is absent (all of them).
	SettingSources []string
	// AddDirs are directories the tools may read and write besides the
	// workspace (Claude Code's --add-dir, qwen's --include-directories),
	// as given.
	AddDirs []string
	// SystemPrompt replaces arbor's system prompt (qwen's --system-prompt).
	SystemPrompt string
	// MaxSessionTurns, when > 0, is how many user turns the session runs
	// (qwen's --max-session-turns).
	MaxSessionTurns int
	// MaxToolCalls, when not nil, is how many tool calls the process may
	// make (qwen's --max-tool-calls; 0: none).
	MaxToolCalls *int
	// SandboxRequired is qwen's --sandbox: commands run confined or not
	// at all.
	SandboxRequired bool
	// FromInit says which launch fields came in the initialize request
	// (--await-initialize): the front end reports them as that request's.
	FromInit struct{ DisallowedTools, MCPServers bool }
}

// usageError is a launch refused; it is ErrUsage.
type usageError struct{ msg string }

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Is(target error) bool { return target == ErrUsage }

func refuse(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// ParseClaudeCode reads the flags the Claude Agent SDK passes to its CLI
// (both --k=v and --k v), keeps the ones arbor has a meaning for and
// refuses the rest (ErrUsage). Under --await-initialize it reads the
// first line of in, which must be the initialize request, and returns the
// input to serve (that line again, then the rest); an error there is not
// ErrUsage (Claude Code exits 1).
func ParseClaudeCode(args []string, in io.Reader) (Launch, io.Reader, error) {
	fs := pflag.NewFlagSet("arbor", pflag.ContinueOnError)
	fs.ParseErrorsAllowlist.UnknownFlags = true
	fs.SetOutput(io.Discard)
	var (
		l                              Launch
		allowed, disallowed, tools     string
		outputFormat, inputFormat, ppt string
		settingSources, debugFile      string
		settings                       string
		verbose, debug, awaitInit      bool
		mcpConfigs                     []string
	)
	fs.StringVar(&outputFormat, "output-format", "", "")
	fs.StringVar(&inputFormat, "input-format", "", "")
	fs.BoolVar(&verbose, "verbose", false, "")
	fs.StringVar(&ppt, "permission-prompt-tool", "", "")
	fs.StringVar(&l.Model, "model", "", "")
	fs.IntVar(&l.MaxTurns, "max-turns", 0, "")
	fs.StringVar(&l.PermissionMode, "permission-mode", "", "")
	fs.StringVar(&allowed, "allowedTools", "", "")
	fs.StringVar(&disallowed, "disallowedTools", "", "")
	fs.StringVar(&l.AppendSystemPrompt, "append-system-prompt", "", "")
	fs.StringVarP(&l.Resume, "resume", "r", "", "") // -r and -c are Claude Code's too
	fs.BoolVar(&l.PartialMessages, "include-partial-messages", false, "")
	fs.StringVar(&tools, "tools", "", "")
	fs.BoolVarP(&l.Continue, "continue", "c", false, "")
	fs.BoolVar(&l.ForkSession, "fork-session", false, "")
	fs.StringVar(&l.SessionID, "session-id", "", "")
	fs.Float64Var(&l.MaxBudgetUSD, "max-budget-usd", 0, "")
	fs.StringVar(&settingSources, "setting-sources", "", "")
	fs.StringVar(&settings, "settings", "", "")
	fs.BoolVarP(&debug, "debug", "d", false, "")
	fs.BoolP("print", "p", false, "") // stream-json is print mode already
	fs.StringVar(&debugFile, "debug-file", "", "")
	fs.Bool("allow-dangerously-skip-permissions", false, "")
	fs.StringArrayVar(&mcpConfigs, "mcp-config", nil, "")
	fs.BoolVar(&l.StrictMCP, "strict-mcp-config", false, "")
	fs.BoolVar(&awaitInit, "await-initialize", false, "")
	fs.String("initialize-fields", "", "") // which fields the SDK sent there; all are read (awaitInitialize)
	fs.StringArrayVar(&l.AddDirs, "add-dir", nil, "")
	if err := fs.Parse(args); err != nil {
		return Launch{}, nil, refuse("%v", err)
	}
	// A Claude Code option arbor does not implement is refused, never
	// silently ignored: the program would otherwise run without what it
	// asked for (see docs/headless-stream-json.md, SDK options).
	if bad := unsupportedFlags(fs, args); len(bad) > 0 {
		return Launch{}, nil, refuse("not supported by arbor, so refused rather than ignored: %s", strings.Join(bad, ", "))
	}
	if awaitInit {
		li, rest, err := awaitInitialize(in)
		if err != nil {
			return Launch{}, nil, err
		}
		in = rest
		if hasJSONValue(li.Request.Settings) {
			if l.Sandbox, err = parseSettingsJSON(li.Request.Settings, "the initialize request's settings"); err != nil {
				return Launch{}, nil, err
			}
		}
		disallowed = strings.Join(append(splitList(disallowed), li.Request.DisallowedTools...), ",")
		l.FromInit.DisallowedTools = li.Request.DisallowedTools != nil
		if hasJSONValue(li.Request.MCPServers) {
			mcpConfigs = append(mcpConfigs, `{"mcpServers":`+string(li.Request.MCPServers)+`}`)
			l.FromInit.MCPServers = true
		}
	}
	if settings != "" {
		s, err := parseSettings(settings)
		if err != nil {
			return Launch{}, nil, err
		}
		if s != nil {
			l.Sandbox = s
		}
	}
	if os.Getenv("CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING") == "true" {
		// The SDK's enableFileCheckpointing: arbor keeps no checkpoints for
		// rewindFiles() to go back to.
		return Launch{}, nil, refuse("enableFileCheckpointing (CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING): arbor keeps no file checkpoints, so refused rather than ignored")
	}
	if ppt != "" && ppt != "stdio" {
		// Approvals come over stdio (canUseTool); an MCP approval tool
		// (permissionPromptToolName) would be silently bypassed.
		return Launch{}, nil, refuse("--permission-prompt-tool %s: arbor asks for approvals over stdio only (canUseTool), so refused rather than ignored", ppt)
	}
	if fs.Changed("setting-sources") {
		l.SettingSources = []string{}
		for _, src := range strings.Split(settingSources, ",") {
			switch src = strings.TrimSpace(src); src {
			case "":
			case "user", "project", "local":
				l.SettingSources = append(l.SettingSources, src)
			default:
				return Launch{}, nil, refuse("--setting-sources: unknown source %q (use user, project, local)", src)
			}
		}
	}
	for _, v := range mcpConfigs {
		servers, err := config.ReadMCPConfig(v)
		if err != nil {
			return Launch{}, nil, refuse("%v", err)
		}
		if l.MCPServers == nil {
			l.MCPServers = map[string]config.MCPServer{}
		}
		maps.Copy(l.MCPServers, servers)
	}
	if l.PermissionMode != "" {
		if _, err := permission.ParseMode(l.PermissionMode); err != nil {
			return Launch{}, nil, refuse("%v", err)
		}
	}
	for _, r := range splitList(allowed) {
		l.AllowedTools = append(l.AllowedTools, tool.RuleFromClaudeCode(r))
	}
	for _, r := range splitList(disallowed) {
		l.DisallowedTools = append(l.DisallowedTools, tool.RuleFromClaudeCode(r))
	}
	if fs.Changed("tools") && tools != "default" {
		l.Tools = splitList(tools)
		if l.Tools == nil {
			l.Tools = []string{} // --tools "": no tools
		}
	}
	if l.SessionID != "" && !isUUID(l.SessionID) {
		return Launch{}, nil, refuse("--session-id %q: a session id is a UUID", l.SessionID)
	}
	if l.ForkSession && l.Resume == "" && !l.Continue {
		return Launch{}, nil, refuse("--fork-session needs --resume or --continue")
	}
	return l, in, nil
}

// unsupportedFlags lists the flags of args that fs does not define.
func unsupportedFlags(fs *pflag.FlagSet, args []string) []string {
	var bad []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return bad
		case strings.HasPrefix(a, "--"):
			name, _, inline := strings.Cut(a[2:], "=")
			f := fs.Lookup(name)
			switch {
			case f == nil:
				bad = append(bad, "--"+name)
			case !inline && f.NoOptDefVal == "":
				i++ // its value
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			// A cluster of short flags (-pc), the last of which may take
			// the next argument, or the rest of this one, as its value.
			for j := 1; j < len(a); j++ {
				if a[j] >= utf8.RuneSelf { // shorthands are ASCII
					bad = append(bad, a)
					break
				}
				f := fs.ShorthandLookup(a[j : j+1])
				if f == nil {
					bad = append(bad, "-"+a[j:j+1])
					break
				}
				if f.NoOptDefVal == "" {
					if j == len(a)-1 {
						i++
					}
					break
				}
			}
		}
	}
	return bad
}

// splitList splits a list of tools or rules separated by commas or spaces
// outside parentheses ("Bash(git log *),Read"), as Claude Code's tool
// flags take; "" is nil.
func splitList(s string) []string {
	var out []string
	depth, start := 0, 0
	flush := func(end int) {
		if f := strings.TrimSpace(s[start:end]); f != "" {
			out = append(out, f)
		}
	}
	for i, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case (r == ',' || r == ' ') && depth == 0:
			flush(i)
			start = i + 1
		}
	}
	flush(len(s))
	return out
}

// isUUID reports whether s is a UUID in its canonical text form.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
				return false
			}
		}
	}
	return true
}
