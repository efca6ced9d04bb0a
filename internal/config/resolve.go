package config

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/arbor-run/arbor/internal/llm"
)

// ModelRef is a model reference resolved to everything needed to call it.
type ModelRef struct {
	// Ref is the normalized reference: "provider/name" or "script:FILE".
	Ref string
	// Provider is the key in Config.Providers, or "script".
	Provider string
	// Type is "anthropic", "openai" or "script".
	Type string
	// Name is the model name sent to the provider.
	Name    string
	BaseURL string
	// APIKey is "" when the provider's server needs none.
	APIKey string
	// Price is nil when the cost is unknown; it is a copy, safe to keep.
	Price         *llm.Price
	ContextWindow int64
	// MaxOutput is 0 for the provider's default.
	MaxOutput int64
	// NoImages says the model takes no image input (images: false).
	NoImages bool
	// ScriptPath is the absolute script file for "script:FILE".
	ScriptPath string
}

const scriptPrefix = "script:"

// DefaultModelRef is the reference to use when none is given: Model when
// set, else anthropic/claude-sonnet-4-5 when the anthropic provider has a
// key, else openai/gpt-5 when the openai provider has one, else
// ErrNoModel.
func (c *Config) DefaultModelRef() (string, error) {
	if c.Model != "" {
		return c.Model, nil
	}
	if c.apiKey(c.Providers["anthropic"]) != "" {
		return DefaultAnthropicModel, nil
	}
	if c.apiKey(c.Providers["openai"]) != "" {
		return DefaultOpenAIModel, nil
	}
	return "", ErrNoModel
}

// Resolve turns a reference into a ModelRef. Accepted forms:
// "provider/name" (the name may itself contain "/" or ":"), "script:FILE"
// (relative to the workspace), and a bare model name that exactly one
// provider's model table lists. A model its provider's table does not list
// is still usable, with Price nil and DefaultContextWindow. A provider
// talking to its vendor's default endpoint (no base_url) must have a key,
// else *MissingKeyError.
func (c *Config) Resolve(ref string) (ModelRef, error) {
	m, err := c.lookup(ref)
	if err != nil {
		return ModelRef{}, err
	}
	if m.Type == TypeScript {
		return m, nil
	}
	p := c.Providers[m.Provider]
	if m.APIKey == "" && p.BaseURL == "" {
		return ModelRef{}, &MissingKeyError{Provider: m.Provider, Var: p.APIKeyEnv}
	}
	return m, nil
}

// Pool resolves the named pool's references, in fallback order. Every
// member must resolve, keys included: a pool is a promise that each
// fallback works.
func (c *Config) Pool(name string) ([]ModelRef, error) {
	refs, ok := c.Pools[name]
	if !ok {
		if len(c.Pools) == 0 {
			return nil, fmt.Errorf("%w %q: no pools are defined (add pools: to config.yaml)", ErrUnknownPool, name)
		}
		return nil, fmt.Errorf("%w %q (defined: %s)", ErrUnknownPool, name, strings.Join(sortedKeys(c.Pools), ", "))
	}
	out := make([]ModelRef, 0, len(refs))
	for i, r := range refs {
		m, err := c.Resolve(r)
		if err != nil {
			return nil, fmt.Errorf("pool %q, member %d (%s): %w", name, i, r, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// lookup resolves ref without checking for an API key; Load uses it to
// validate references before any key is needed.
func (c *Config) lookup(ref string) (ModelRef, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return ModelRef{}, fmt.Errorf("%w: empty reference", ErrInvalidRef)
	}
	if file, ok := strings.CutPrefix(ref, scriptPrefix); ok {
		if file == "" {
			return ModelRef{}, fmt.Errorf("%w %q: write script:FILE", ErrInvalidRef, ref)
		}
		path := c.absPath(file)
		return ModelRef{
			Ref:           ref,
			Provider:      TypeScript,
			Type:          TypeScript,
			Name:          filepath.Base(path),
			Price:         &llm.Price{}, // a scripted model costs nothing
			ContextWindow: DefaultContextWindow,
			ScriptPath:    path,
		}, nil
	}

	provider, name, qualified := strings.Cut(ref, "/")
	if !qualified {
		var err error
		if provider, err = c.providerOf(ref); err != nil {
			return ModelRef{}, err
		}
		name = ref
	}
	if provider == "" || name == "" {
		return ModelRef{}, fmt.Errorf("%w %q: write provider/name", ErrInvalidRef, ref)
	}
	p, ok := c.Providers[provider]
	if !ok {
		return ModelRef{}, &UnknownProviderError{Ref: ref, Provider: provider, Known: sortedKeys(c.Providers)}
	}

	m := ModelRef{
		Ref:           provider + "/" + name,
		Provider:      provider,
		Type:          p.Type,
		Name:          name,
		BaseURL:       p.BaseURL,
		APIKey:        c.apiKey(p),
		ContextWindow: DefaultContextWindow,
	}
	if info, ok := modelInfo(p, name); ok {
		if info.Price != nil {
			pr := *info.Price
			m.Price = &pr
		}
		if info.ContextWindow > 0 {
			m.ContextWindow = info.ContextWindow
		}
		m.MaxOutput = info.MaxOutput
		m.NoImages = info.Images != nil && !*info.Images
	}
	return m, nil
}

// providerOf finds the one provider whose model table lists a bare name.
func (c *Config) providerOf(name string) (string, error) {
	var found []string
	for _, pname := range sortedKeys(c.Providers) {
		if _, ok := modelInfo(c.Providers[pname], name); ok {
			found = append(found, pname)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("%w %q: no provider lists it; write it as provider/%s (providers: %s)",
			ErrUnknownModel, name, name, strings.Join(sortedKeys(c.Providers), ", "))
	default:
		alts := make([]string, len(found))
		for i, p := range found {
			alts[i] = p + "/" + name
		}
		return "", fmt.Errorf("%w %q: listed by several providers; write one of %s",
			ErrAmbiguousModel, name, strings.Join(alts, ", "))
	}
}

// modelInfo looks name up in p's table: exactly, or as a dated snapshot of
// a listed model ("claude-sonnet-4-5-20250929", "gpt-5-2025-08-07"),
// preferring the longest listed name.
func modelInfo(p Provider, name string) (Model, bool) {
	if m, ok := p.Models[name]; ok {
		return m, true
	}
	best := ""
	for k := range p.Models {
		suffix, ok := strings.CutPrefix(name, k+"-")
		if ok && isDateSuffix(suffix) && len(k) > len(best) {
			best = k
		}
	}
	if best == "" {
		return Model{}, false
	}
	return p.Models[best], true
}

func isDateSuffix(s string) bool {
	if s == "" || s[0] < '0' || s[0] > '9' {
		return false
	}
	return strings.Trim(s, "0123456789-") == ""
}

// apiKey is the provider's literal key, else the value of its key
// variable; "" when neither is set.
func (c *Config) apiKey(p Provider) string {
	if p.APIKey != "" {
		return p.APIKey
	}
	if p.APIKeyEnv != "" {
		return c.env(p.APIKeyEnv)
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
