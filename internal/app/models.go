package app

import (
	"context"
	"fmt"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/anthropic"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/llm/openai"
)

// Model is a resolved model ready to call.
type Model struct {
	Ref      config.ModelRef
	Provider llm.Provider
}

// Model picks the model: ref if given, else the configured default
// (--model, ARBOR_MODEL, config, or inferred from API keys). Every user of
// one model in this process shares its provider (and, for script:FILE, its
// one scripted server). Errors that the user fixes by configuration wrap
// config.ErrNoModel or config.ErrMissingKey.
func (a *App) Model(ref string) (Model, error) {
	if ref == "" {
		var err error
		if ref, err = a.Config().DefaultModelRef(); err != nil {
			return Model{}, err
		}
	}
	mr, err := a.Config().Resolve(ref)
	if err != nil {
		return Model{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if m, ok := a.models[mr.Ref]; ok {
		return m, nil
	}
	p, err := a.provider(mr)
	if err != nil {
		return Model{}, err
	}
	m := Model{Ref: mr, Provider: p}
	a.models[mr.Ref] = m
	return m, nil
}

func (a *App) provider(mr config.ModelRef) (llm.Provider, error) {
	hc := llm.NewHTTPClient()
	var p llm.Provider
	switch mr.Type {
	case "anthropic":
		p = anthropic.New(anthropic.Options{Name: mr.Provider, APIKey: mr.APIKey, BaseURL: mr.BaseURL, HTTPClient: hc, MaxTokens: mr.MaxOutput})
	case "openai":
		p = openai.New(openai.Options{Name: mr.Provider, APIKey: mr.APIKey, BaseURL: mr.BaseURL, HTTPClient: hc, MaxTokens: mr.MaxOutput})
	case "script":
		script, err := llmtest.LoadScript(mr.ScriptPath)
		if err != nil {
			return nil, fmt.Errorf("%w: --model %s: %w", ErrUsage, mr.Ref, err) // the user's file: exit 2
		}
		srv, err := llmtest.Serve(context.Background(), "127.0.0.1:0", script)
		if err != nil {
			return nil, err
		}
		a.closers = append(a.closers, srv.Close) // a.mu is held by Model
		// The scripted model speaks the Anthropic wire format over real
		// HTTP, so offline demos exercise the same code path as production.
		p = anthropic.New(anthropic.Options{Name: "script", APIKey: "script", BaseURL: srv.URL, HTTPClient: hc})
	default:
		return nil, fmt.Errorf("model %s: unknown provider type %q", mr.Ref, mr.Type)
	}
	pol := llm.RetryPolicy{
		MaxAttempts:  a.Config().Retry.MaxAttempts,
		StallTimeout: time.Duration(a.Config().Retry.StallTimeout),
		OnRetry: func(ctx context.Context, attempt int, delay time.Duration, err error) {
			a.Bus.Publish(&agent.Retrying{Meta: agent.Meta{SessionID: agent.SessionOf(ctx)},
				Attempt: attempt, Delay: delay, Error: err.Error()})
		},
	}
	return llm.WithRetry(p, pol), nil
}
