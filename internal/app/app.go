// Package app is arbor's composition root: it turns configuration into a
// store, providers, a permission engine, tools and agents. It is the only
// package that knows every concrete type; front ends (cli, protocols) get
// what they need from it.
package app

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/mcpclient"
	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/sqlite"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tool/sandbox"
)

// Options open an App.
type Options struct {
	// Workspace is the directory the agent works in; "" = current directory.
	Workspace string
	Overrides config.Overrides
	// Getenv reads the environment; nil = os.Getenv.
	Getenv func(string) string
	// SandboxDefault is the sandbox mode where neither the config, the
	// environment nor a flag sets one ("" is off; the CLI's commands that
	// run agents pass auto).
	SandboxDefault string
	// ProjectSources, when not nil, are the only sources of project files
	// read (Claude Code's --setting-sources: user, project, local).
	ProjectSources []string
	// Diag, when set, is told what goes wrong out of any turn's sight
	// (a project hook that failed at a turn's end), a line each.
	Diag io.Writer
	// ExistingStore is set by the commands that work on what is stored
	// (arbor runs, tree, sessions, answer, stop, trace, resume): a SQLite
	// file that --store, ARBOR_STORE or the config names and that does not
	// exist is a misspelling to report (ErrUsage), not a store to create
	// empty, which would show no runs as if they were lost.
	ExistingStore bool
}

// App holds what every front end shares: config, store, event bus,
// interaction broker and permission engine. Close releases it.
type App struct {
	Workspace   string
	Store       store.Store
	Bus         *agent.Bus
	Broker      *agent.Broker
	Permissions *permission.Engine
	// config is the current configuration: an immutable snapshot that
	// Reload swaps whole, so readers need no lock.
	config    atomic.Pointer[config.Config]
	getenv    func(string) string
	overrides config.Overrides
	env       map[string]string // values set with SetEnv; guarded by mu

	mu      sync.Mutex // guards closers, views, models, mcp, mcpObservers, mcpSDK, overrides
	closers []func()
	// views are the views In made of this App and not closed yet (an
	// opened App's only): its Close closes them.
	views  map[*App]struct{}
	models map[string]Model // by resolved ref
	// mcp runs the MCP servers, from the first session on (see MCP).
	mcp          *mcpclient.Manager
	mcpObservers []func()
	// mcpSDK reaches a client's in-process servers (SetMCPSDK).
	mcpSDK func(server string) mcp.Transport
	// root is the App a view made by In belongs to; nil for an opened one.
	root *App

	// sandbox confines the workspace's commands; made once by Sandbox
	// (nil: off, or sandboxErr says why it could not be made).
	sandboxOnce sync.Once
	sandbox     *sandbox.Sandbox
	sandboxErr  error
	// warnings are said once at start (Warnings), set by Open.
	warnings []string
	// telemetry is the OpenTelemetry export, nil when no endpoint is set.
	telemetry exporter
	// sandboxDefault is Options.SandboxDefault, for views and reloads.
	sandboxDefault string
	// project is the workspace's own files (AGENTS.md, skills, settings),
	// read when the App is made from projectSources (Options.ProjectSources).
	project        projectFiles
	projectSources []string
	// diag is Options.Diag; diagMu serializes its lines (hooks report
	// from several sessions' goroutines).
	diagMu sync.Mutex
	diag   io.Writer
	// warnedOnce holds the warnings said on diag that are said once
	// (warnOnce); guarded by diagMu.
	warnedOnce map[string]bool
	// transcripts are the hooks' transcript files (transcript.go), the
	// root App's.
	transcripts transcripts
}

// Open loads the configuration and opens the store.
func Open(ctx context.Context, o Options) (*App, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	ws := o.Workspace
	if ws == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
		ws = wd
	}
	ws, err := filepath.Abs(ws)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if err := checkWorkspace(ws); err != nil {
		return nil, err
	}
	cfg, err := config.Load(config.LoadOptions{Workspace: ws, Overrides: o.Overrides, Getenv: getenv, SandboxDefault: o.SandboxDefault})
	if err != nil {
		return nil, err
	}
	if o.ExistingStore {
		if err := checkStore(cfg); err != nil {
			return nil, err
		}
	}
	mode, err := permission.ParseMode(cfg.Mode)
	if err != nil {
		return nil, cfg.Invalid("mode", err)
	}
	var a *App // the hooks ask for its sandbox when they run
	pf, problems := loadProject(ws, cfg, o.ProjectSources, func() *sandbox.Sandbox { return a.Sandbox() })
	perms, err := permission.New(permission.Options{
		Mode: mode, Workspace: ws, Roots: cfg.AddDirs,
		ProjectFile: cfg.ProjectPermissionsFile(), UserFile: cfg.UserPermissionsFile(),
		Extra: pf.projectRules(), Tools: RuleTools, Rename: tool.RuleFromClaudeCode,
	})
	if err != nil {
		return nil, err
	}
	for _, p := range perms.Problems() {
		problems = append(problems, "permission rules: "+p.Error())
	}
	// Finding the sandbox's mechanism may run bubblewrap once (tens of
	// milliseconds, mostly in the child and the kernel): it runs while the
	// store opens, and checkSandbox below finds its cached result.
	detected := detectSandbox(cfg)
	st, err := openStore(ctx, cfg)
	<-detected
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	bus := agent.NewBus()
	a = &App{
		env:       map[string]string{},
		Workspace: ws, Store: st, Bus: bus, Broker: agent.NewBroker(bus),
		Permissions: perms, getenv: getenv, models: map[string]Model{}, overrides: o.Overrides, sandboxDefault: o.SandboxDefault,
		transcripts: transcripts{dir: transcriptsDir(getenv)},
		project:     pf, warnings: problems, projectSources: o.ProjectSources, diag: o.Diag,
	}
	a.config.Store(cfg)
	a.onClose(func() { _ = st.Close() })
	a.setTimeouts(cfg)
	a.notifyHooks()
	if err := a.startTelemetry(ctx, cfg); err != nil {
		a.Close()
		return nil, err
	}
	if err := a.checkSandbox(); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// openStore opens the dialect cfg names: PostgreSQL for a postgres:// URL,
// else the SQLite file.
func openStore(ctx context.Context, cfg *config.Config) (store.Store, error) {
	if u := cfg.StoreURL(); u != "" {
		return openPostgres(ctx, u)
	}
	return sqlite.Open(ctx, cfg.DBPath())
}

// checkStore refuses, as ErrUsage, a SQLite file cfg names that does not
// exist (Options.ExistingStore). The default file is not checked: that it
// is missing only means nothing was stored yet.
func checkStore(cfg *config.Config) error {
	if cfg.Store == "" || cfg.StoreURL() != "" {
		return nil
	}
	path := cfg.DBPath()
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: store %s does not exist (named by --store, ARBOR_STORE or the config's store): check the path; only the commands that start work create one", ErrUsage, path)
	}
	return nil
}

// StoreArg is the --store value that opens this App's store in another
// arbor process: the database URL, or the SQLite file.
func (a *App) StoreArg() string {
	if u := a.Config().StoreURL(); u != "" {
		return u
	}
	return a.Config().DBPath()
}

// Config returns the current configuration. The value is never changed:
// Reload installs a new one, so a caller keeps a consistent snapshot.
func (a *App) Config() *config.Config { return a.config.Load() }

// setTimeouts applies cfg's interaction timeouts to the broker.
func (a *App) setTimeouts(cfg *config.Config) {
	a.Broker.SetTimeout(agent.KindQuestion, cfg.QuestionTimeout)
	a.Broker.SetTimeout(agent.KindApproval, cfg.ApprovalTimeout)
}

// In returns a view of a that works in dir (a worktree the session moves
// to, a run's workspace): the same store, bus, broker and environment,
// with dir's project configuration and permission rules, and a's
// session-scope rules carried over. What the view acquires (its sandbox
// and the sandbox's temporary directory, a scripted model's server) is
// its own: the view's Close releases it, and closing the App it was made
// of closes every view of it still open.
func (a *App) In(dir string) (*App, error) {
	ws, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	root := a
	if a.root != nil {
		root = a.root
	}
	a.mu.Lock()
	env := maps.Clone(a.env)
	a.mu.Unlock()
	ov := root.currentOverrides()
	v := &App{Workspace: ws, Store: a.Store, Bus: a.Bus, Broker: a.Broker, getenv: a.getenv,
		overrides: ov, env: env, models: map[string]Model{}, root: root, sandboxDefault: root.sandboxDefault}
	cfg, err := config.Load(config.LoadOptions{Workspace: ws, Overrides: ov, Getenv: v.lookupEnv, SandboxDefault: root.sandboxDefault})
	if err != nil {
		return nil, err
	}
	root.mu.Lock()
	if root.views == nil {
		root.views = map[*App]struct{}{}
	}
	root.views[v] = struct{}{}
	root.mu.Unlock()
	v.config.Store(cfg)
	v.project, _ = loadProject(ws, cfg, root.projectSources, v.Sandbox) // its problems are the workspace's, said at start
	v.Permissions, err = permission.New(permission.Options{
		Mode: a.Permissions.Mode(), Workspace: ws, Roots: cfg.AddDirs,
		ProjectFile: v.Config().ProjectPermissionsFile(), UserFile: v.Config().UserPermissionsFile(),
		Extra: v.project.projectRules(), Tools: RuleTools, Rename: tool.RuleFromClaudeCode,
	})
	if err != nil {
		v.Close()
		return nil, err
	}
	for _, r := range a.Permissions.Rules() {
		if r.Scope == permission.ScopeSession {
			if err := v.Permissions.AddRule(r); err != nil {
				v.Close()
				return nil, fmt.Errorf("carry session rule %s: %w", r, err)
			}
		}
	}
	return v, nil
}

// onClose has fn run by a's Close.
func (a *App) onClose(fn func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closers = append(a.closers, fn)
}

// Close releases everything Open (or In) and later calls acquired, in
// reverse order, after closing the views In made of it that are still
// open. It is safe to call twice.
func (a *App) Close() {
	a.mu.Lock()
	cs, views := a.closers, a.views
	a.closers, a.views = nil, nil
	a.mu.Unlock()
	for v := range views {
		v.Close()
	}
	if a.root != nil {
		a.root.mu.Lock()
		delete(a.root.views, a)
		a.root.mu.Unlock()
	}
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}

// ErrUsage marks errors the user fixes by changing flags or configuration
// (exit code 2).
var ErrUsage = errors.New("usage error")

// checkWorkspace refuses a workspace (-C) that is missing or not a
// directory as ErrUsage, before Open reads or creates anything for it.
func checkWorkspace(ws string) error {
	fi, err := os.Stat(ws)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: workspace %s does not exist", ErrUsage, ws)
	case err != nil:
		return fmt.Errorf("%w: workspace: %w", ErrUsage, err)
	case !fi.IsDir():
		return fmt.Errorf("%w: workspace %s is not a directory", ErrUsage, ws)
	}
	return nil
}

// NewID returns a new time-ordered id such as "20261129-213005-3f9a1c".
func NewID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// WithNewID calls create with a fresh id, and again with another while
// the id was drawn before (create fails with store.ErrConflict), five
// times at most. Ids are the time to the second plus 24 random bits, so a
// program creating thousands of things a second may draw one twice; the
// insert that conflicts is the check, so nothing reads the store first.
func WithNewID[T any](create func(id string) (T, error)) (T, error) {
	for range 4 {
		v, err := create(NewID())
		if !errors.Is(err, store.ErrConflict) {
			return v, err
		}
	}
	return create(NewID())
}

// Secrets returns every credential the configuration can reach, so the
// agent can keep them out of transcripts and events: the providers' keys,
// arbor's own tokens and store connection string (and its password), the
// OpenTelemetry exporter's headers, and the headers and environment values
// of the MCP servers (after their ${VAR}s are filled in) and the variables
// they name. Every hook runner redacts them from what its hooks give back
// (hook.Runner.Secrets): the project's (sessionHooks) and a client's
// (stream-json's SDK callbacks), so what a hook prints is redacted once,
// wherever it goes next: the model's context, a client's stream, the logs.
func (a *App) Secrets() []string {
	cfg := a.Config()
	var vals []string
	for _, p := range cfg.Providers {
		vals = append(vals, p.APIKey, a.lookupEnv(p.APIKeyEnv))
	}
	for _, name := range tool.CredentialEnv {
		vals = append(vals, a.lookupEnv(name))
	}
	for _, dsn := range []string{a.lookupEnv("ARBOR_STORE"), cfg.Store} {
		if u, err := url.Parse(dsn); err == nil {
			pw, _ := u.User.Password()
			if q := u.Query().Get("password"); pw != "" || q != "" {
				vals = append(vals, dsn, pw, q)
			}
		}
	}
	for _, v := range cfg.Telemetry.Headers {
		vals = append(vals, v)
	}
	for _, s := range cfg.MCPServers {
		e, err := s.Expand(func(name string) string { // the variables it names: a token alone, as a command prints it
			v := a.lookupEnv(name)
			vals = append(vals, v)
			return v
		})
		if err == nil {
			vals = append(vals, slices.Collect(maps.Values(e.Headers))...)
			vals = append(vals, slices.Collect(maps.Values(e.Env))...)
		}
	}
	var out []string
	for _, v := range vals {
		if len(v) >= 8 && !slices.Contains(out, v) { // shorter values are not keys and would redact noise
			out = append(out, v)
		}
	}
	return out
}

// keyEnv names the variables that hold the configured providers' keys,
// which an agent's shell commands do without (tool.BuiltinOptions.WithheldEnv).
func (a *App) keyEnv() []string {
	var out []string
	for _, p := range a.Config().Providers {
		if p.APIKeyEnv != "" && !slices.Contains(out, p.APIKeyEnv) {
			out = append(out, p.APIKeyEnv)
		}
	}
	return out
}

// OwnerSocket is the socket of the process driving run id: the one its
// lease names, else where this configuration's owner would listen
// (AnswerSocket).
func (a *App) OwnerSocket(ctx context.Context, id string) string {
	if l, err := a.Store.GetLease(ctx, store.RunLeaseKey(id)); err == nil && l.Addr != "" {
		return l.Addr
	}
	return a.AnswerSocket(id)
}

// AnswerSocket is the unix socket on which the process driving run id
// takes answers from 'arbor answer'. It lives beside the database, or in
// the temporary directory when that path would be too long for a socket.
func (a *App) AnswerSocket(id string) string {
	p := filepath.Join(filepath.Dir(a.Config().DBPath()), "runs", id+".sock")
	if len(p) < 100 {
		return p
	}
	sum := sha256.Sum256([]byte(p))
	return filepath.Join(os.TempDir(), "arbor-"+hex.EncodeToString(sum[:8])+".sock")
}

// Reload reads the configuration files and environment again (flags keep
// their values): later sessions and model switches use the new providers,
// prices and pools, the permission mode follows the new config, and the
// MCP servers whose entries changed restart (see reloadMCP). It must not
// run while a session is being created.
func (a *App) Reload() error {
	cfg, err := config.Load(config.LoadOptions{Workspace: a.Workspace, Overrides: a.currentOverrides(), Getenv: a.lookupEnv, SandboxDefault: a.sandboxDefault})
	if err != nil {
		return err
	}
	mode, err := permission.ParseMode(cfg.Mode)
	if err != nil {
		return cfg.Invalid("mode", err)
	}
	a.mu.Lock()
	a.config.Store(cfg)
	a.models = map[string]Model{}
	a.mu.Unlock()
	a.Permissions.SetMode(mode)
	a.setTimeouts(cfg)
	a.reloadMCP(cfg)
	return nil
}

// currentOverrides are the flags' values and the servers AddMCPServers
// added.
func (a *App) currentOverrides() config.Overrides {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.overrides
}

// SetEnv sets an environment value for this process's configuration only
// (a credential received over a protocol), without touching the real
// environment; Reload applies it.
func (a *App) SetEnv(key, value string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.env[key] = value
}

func (a *App) lookupEnv(key string) string {
	a.mu.Lock()
	v, ok := a.env[key]
	a.mu.Unlock()
	if ok {
		return v
	}
	return a.getenv(key)
}
