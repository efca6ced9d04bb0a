package config

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/tool/sandbox"
)

// envName matches an environment variable's name; compiled on first use.
var envName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// validate reports the first invalid field, in a stable order. Model
// references are checked for form and provider, not for keys: a key is
// needed only when the model is used (Resolve).
func (c *Config) validate() error {
	if c.Model != "" {
		if _, err := c.lookup(c.Model); err != nil {
			return c.invalid("model", err, "%v", err)
		}
	}
	for _, d := range c.AddDirs {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return c.invalid("add_dirs", err, "%s is not a directory the tools could work in", d)
		}
	}
	if c.Mode == "" {
		return c.invalid("mode", nil, "must not be empty (e.g. default, auto-edit, trust)")
	}
	if err := c.validateStore(); err != nil {
		return err
	}
	if c.MaxTurns < 1 {
		return c.invalid("max_turns", nil, "must be at least 1 (got %d)", c.MaxTurns)
	}
	if c.QuestionTimeout < 0 || c.ApprovalTimeout < 0 {
		return c.invalid("question_timeout", nil, "question_timeout and approval_timeout must not be negative (got %v, %v)", c.QuestionTimeout, c.ApprovalTimeout)
	}
	if t := c.Compaction.Threshold; !(t > 0 && t <= 1) {
		return c.invalid("compaction.threshold", nil, "must be a fraction of the context window in (0, 1] (got %v)", t)
	}
	if c.Compaction.KeepRecent < 0 {
		return c.invalid("compaction.keep_recent", nil, "must not be negative (got %d)", c.Compaction.KeepRecent)
	}
	if c.Retry.MaxAttempts < 1 {
		return c.invalid("retry.max_attempts", nil, "must be at least 1 (got %d)", c.Retry.MaxAttempts)
	}
	if c.Retry.StallTimeout <= 0 {
		return c.invalid("retry.stall_timeout", nil, "must be a positive duration such as 60s (got %v)", c.Retry.StallTimeout)
	}
	if _, err := sandbox.ParseMode(c.Sandbox.Mode); err != nil {
		return c.invalid("sandbox.mode", err, "%q is not a sandbox mode: off, auto or required", c.Sandbox.Mode)
	}
	if c.Sandbox.MaxProcesses < 0 {
		return c.invalid("sandbox.max_processes", nil, "must not be negative (0 = the default; got %d)", c.Sandbox.MaxProcesses)
	}
	if m := c.Sandbox.MaxMemory; m != "" {
		if _, err := sandbox.ParseSize(m); err != nil {
			return c.invalid("sandbox.max_memory", err, "%q is not a size such as 512MiB or 2GiB", m)
		}
	}
	if c.Headless.QueueLimit < 0 {
		return c.invalid("headless.queue_limit", nil, "must not be negative (0 = no limit; got %d)", c.Headless.QueueLimit)
	}
	if err := c.validateCluster(); err != nil {
		return err
	}
	if err := c.validateTelemetry(); err != nil {
		return err
	}
	if err := c.validateMCP(); err != nil {
		return err
	}
	for _, name := range sortedKeys(c.Providers) {
		if err := c.validateProvider(name, c.Providers[name]); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(c.NodeModels) {
		field := "node_models." + name
		if strings.TrimSpace(name) == "" || strings.ContainsAny(name, "/:") {
			return c.invalid(field, nil, "a node model needs a plain name such as fast or strong")
		}
		if _, err := c.lookup(c.NodeModels[name]); err != nil {
			return c.invalid(field, err, "%v", err)
		}
	}
	for _, name := range sortedKeys(c.Pools) {
		field := "pools." + name
		refs := c.Pools[name]
		if strings.TrimSpace(name) == "" {
			return c.invalid(field, nil, "a pool needs a name")
		}
		if len(refs) == 0 {
			return c.invalid(field, nil, "must list at least one model")
		}
		for i, r := range refs {
			if _, err := c.lookup(r); err != nil {
				return c.invalid(fmt.Sprintf("%s[%d]", field, i), err, "%v", err)
			}
		}
	}
	return nil
}

func (c *Config) validateCluster() error {
	cl := c.Cluster
	switch {
	case cl.Heartbeat < MinHeartbeat:
		return c.invalid("cluster.heartbeat", nil, "must be at least %v (got %v)", MinHeartbeat, cl.Heartbeat)
	case cl.LeaseTTL < MinLeaseBeats*cl.Heartbeat:
		return c.invalid("cluster.lease_ttl", nil, "must be at least %d heartbeats (%d × %v = %v; got %v): a lease outlives two missed renewals",
			MinLeaseBeats, MinLeaseBeats, cl.Heartbeat, MinLeaseBeats*cl.Heartbeat, cl.LeaseTTL)
	case cl.Poll < MinPoll || cl.Poll > MaxPoll:
		return c.invalid("cluster.poll", nil, "must be between %v and %v (got %v)", MinPoll, MaxPoll, cl.Poll)
	}
	return nil
}

func (c *Config) validateStore() error {
	switch {
	case c.Store == "" && c.stateHome == "":
		return c.invalid("store", nil, "no default database location: set HOME or XDG_STATE_HOME, or set store to a file path")
	case isURL(c.Store):
		u, err := url.Parse(c.Store)
		if err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err // without the URL itself: it holds the password
			}
			return c.invalid("store", err, "not a valid URL: %v", err)
		}
		if u.Scheme != "postgres" && u.Scheme != "postgresql" {
			return c.invalid("store", nil, "unsupported database %q: use a SQLite file path or a postgres:// URL", u.Scheme)
		}
	}
	return nil
}

func (c *Config) validateProvider(name string, p Provider) error {
	field := "providers." + name
	switch {
	case strings.TrimSpace(name) == "" || strings.ContainsAny(name, "/ \t"):
		return c.invalid(field, nil, "a provider name must be non-empty without spaces or '/'")
	case name == TypeScript:
		return c.invalid(field, nil, "the name script is reserved for script:FILE")
	case p.Type != TypeAnthropic && p.Type != TypeOpenAI:
		return c.invalid(field+".type", nil, "must be %q or %q (got %q)", TypeAnthropic, TypeOpenAI, p.Type)
	case p.APIKeyEnv != "" && !envName().MatchString(p.APIKeyEnv):
		return c.invalid(field+".api_key_env", nil,
			"must name an environment variable such as MY_API_KEY (got %q; a literal key goes in api_key)", redact(p.APIKeyEnv))
	}
	if p.BaseURL != "" {
		u, err := url.Parse(p.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return c.invalid(field+".base_url", err, "must be an http:// or https:// URL (got %q)", p.BaseURL)
		}
	}
	for _, mname := range sortedKeys(p.Models) {
		m := p.Models[mname]
		mfield := field + ".models." + mname
		switch {
		case strings.TrimSpace(mname) == "":
			return c.invalid(mfield, nil, "a model needs a name")
		case m.ContextWindow < 0:
			return c.invalid(mfield+".context_window", nil, "must not be negative (got %d)", m.ContextWindow)
		case m.MaxOutput < 0:
			return c.invalid(mfield+".max_output", nil, "must not be negative (got %d)", m.MaxOutput)
		case m.Price != nil && !validPrice(m.Price):
			return c.invalid(mfield+".price", nil, "prices must be non-negative dollars per million tokens (got %+v)", *m.Price)
		}
	}
	return nil
}

func validPrice(p *llm.Price) bool {
	for _, v := range []float64{p.InputPerMTok, p.OutputPerMTok, p.CacheReadPerMTok, p.CacheWritePerMTok} {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// redact keeps a value that may be a secret out of error messages.
func redact(s string) string {
	if len(s) <= 8 {
		return s
	}
	return s[:4] + "…"
}

// Invalid is the ValidationError of field, naming the layer that set it,
// for a check made outside this package (the permission mode's, whose
// parser is the permission package's): err's text is the reason.
func (c *Config) Invalid(field string, err error) *ValidationError {
	return c.invalid(field, err, "%v", err)
}

func (c *Config) invalid(field string, err error, format string, args ...any) *ValidationError {
	return &ValidationError{Field: field, Source: c.sourceOf(field), Reason: fmt.Sprintf(format, args...), Err: err}
}
