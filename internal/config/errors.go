package config

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinels classify configuration failures; callers use errors.Is.
var (
	// ErrInvalid: the merged configuration, or one of its files, is not
	// acceptable. *ValidationError and *FileError unwrap to it.
	ErrInvalid = errors.New("invalid configuration")
	// ErrUnknownKey: a config file holds a key arbor does not know (a typo
	// that would otherwise be silently ignored). *FileError unwraps to it.
	ErrUnknownKey = errors.New("unknown key")
	// ErrNoModel: no model was chosen and none can be inferred from the
	// environment. Its message says exactly what to set.
	ErrNoModel = errors.New("no model configured: set ANTHROPIC_API_KEY (uses anthropic/claude-sonnet-4-5) or OPENAI_API_KEY (openai/gpt-5), or OPENAI_BASE_URL with --model openai/NAME for a compatible server, or pass --model provider/name (or ARBOR_MODEL, or model: in config.yaml); --model script:FILE runs a scripted model offline")
	// ErrMissingKey: the chosen provider needs an API key and none is set.
	// *MissingKeyError unwraps to it.
	ErrMissingKey = errors.New("missing API key")
	// ErrUnknownProvider: a model reference names a provider that is not
	// configured. *UnknownProviderError unwraps to it.
	ErrUnknownProvider = errors.New("unknown provider")
	// ErrUnknownModel: a bare model name is listed by no provider.
	ErrUnknownModel = errors.New("unknown model")
	// ErrAmbiguousModel: a bare model name is listed by several providers.
	ErrAmbiguousModel = errors.New("ambiguous model")
	// ErrInvalidRef: a model reference is malformed ("", "anthropic/",
	// "script:").
	ErrInvalidRef = errors.New("invalid model reference")
	// ErrUnknownPool: Pool was asked for a name the config does not define.
	ErrUnknownPool = errors.New("unknown model pool")
)

// ValidationError names the configuration field that is wrong, why, and
// which layer set it. It unwraps to ErrInvalid, and to Err when a more
// specific cause (such as ErrUnknownProvider) is known.
type ValidationError struct {
	// Field is the dotted YAML path: "max_turns", "providers.foo.type",
	// "pools.fast[1]".
	Field string
	// Source is the layer that set the value: "built-in", a file path,
	// "environment (ARBOR_MODEL)", "flag --model"; empty when unknown.
	Source string
	Reason string
	Err    error
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("invalid config: ")
	b.WriteString(e.Field)
	if e.Source != "" {
		fmt.Fprintf(&b, " (from %s)", e.Source)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

func (e *ValidationError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalid, e.Err}
	}
	return []error{ErrInvalid}
}

// FileError is a problem inside one config file: malformed YAML, a value
// of the wrong type, or an unknown key. It unwraps to ErrInvalid and to
// Err (ErrUnknownKey for unknown keys, the YAML error otherwise).
type FileError struct {
	Path string
	// Line is 1-based; 0 when the YAML library did not say.
	Line int
	// Key is the dotted path of an unknown key ("providers.anthropic.modles").
	Key string
	Err error
}

func (e *FileError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "config file %s", e.Path)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, ": %v %q", e.Err, e.Key)
		return b.String()
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *FileError) Unwrap() []error { return []error{ErrInvalid, e.Err} }

// MissingKeyError says which variable would hold the key a provider needs.
// It unwraps to ErrMissingKey.
type MissingKeyError struct {
	Provider string
	// Var is the environment variable the provider reads its key from;
	// "" when the provider names none.
	Var string
}

func (e *MissingKeyError) Error() string {
	if e.Var == "" {
		return fmt.Sprintf("provider %q needs an API key: set api_key_env (or api_key, or a base_url for a server that needs none) under providers.%s in config.yaml",
			e.Provider, e.Provider)
	}
	return fmt.Sprintf("provider %q needs an API key: set %s (or api_key_env / api_key under providers.%s in config.yaml)",
		e.Provider, e.Var, e.Provider)
}

func (e *MissingKeyError) Unwrap() error { return ErrMissingKey }

// UnknownProviderError lists the providers that would have been accepted.
// It unwraps to ErrUnknownProvider.
type UnknownProviderError struct {
	Ref      string
	Provider string
	Known    []string
}

func (e *UnknownProviderError) Error() string {
	return fmt.Sprintf("unknown provider %q in model %q (known providers: %s; or script:FILE)",
		e.Provider, e.Ref, strings.Join(e.Known, ", "))
}

func (e *UnknownProviderError) Unwrap() error { return ErrUnknownProvider }
