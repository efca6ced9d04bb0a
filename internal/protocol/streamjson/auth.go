package streamjson

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/arbor-run/arbor/internal/config"
)

// needsAuth reports whether err says no model can be used until the
// client gives credentials.
func needsAuth(err error) bool {
	return errors.Is(err, config.ErrNoModel) || errors.Is(err, config.ErrMissingKey)
}

// authRequestID is the request id of auth_required (the spec's).
const authRequestID = "auth-init"

// authenticate asks the client for credentials when no model can be used
// (auth_required), applies the answer (and, with persist, has config save
// it in the user config file), reloads the config, then says auth_ok. It
// runs in a turn, on the session runner, so the reload happens on the
// session's owner; the reader meanwhile handles or queues input lines as
// usual. It reports success; an interrupt or the end of input ends it.
func (s *Server) authenticate(ctx context.Context) bool {
	ch := make(chan authReply, 1)
	s.mu.Lock()
	s.authReq = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.authReq = nil
		s.mu.Unlock()
	}()
	var providers []authProvider
	for name, p := range s.app.Config().Providers {
		if p.APIKeyEnv != "" { // servers that take no key (a local Ollama) need no credentials
			providers = append(providers, authProvider{ID: name, Type: p.Type, Fields: []string{"api_key"}})
		}
	}
	sort.Slice(providers, func(i, j int) bool { return providers[i].ID < providers[j].ID })
	s.write(systemMessage{Type: "system", Subtype: "auth_required", Reason: "not_configured", UUID: newUUID()})
	s.write(controlRequestOut{Type: "control_request", RequestID: authRequestID, Request: outRequest{
		Subtype: "auth_required", Reason: "not_configured", Providers: providers,
	}})
	select {
	case <-ctx.Done():
		return false
	case <-s.inputDone:
		return false
	case a := <-ch:
		if a.refused != "" {
			fmt.Fprintf(s.diag, "arbor: stream-json: the client refused auth_required: %s\n", a.refused)
			return false
		}
		if err := s.applyAuth(a); err != nil {
			fmt.Fprintf(s.diag, "arbor: stream-json: auth: %v\n", err)
			return false
		}
		s.write(systemMessage{Type: "system", Subtype: "auth_ok", UUID: newUUID()})
		return true
	}
}

func (s *Server) applyAuth(a authReply) error {
	p, ok := s.app.Config().Providers[a.ProviderID]
	if !ok {
		return fmt.Errorf("unknown provider %q", a.ProviderID)
	}
	key := a.Values["api_key"]
	if key == "" {
		return errors.New("auth_response has no api_key value")
	}
	if p.APIKeyEnv == "" {
		return fmt.Errorf("provider %q takes no API key", a.ProviderID)
	}
	s.app.SetEnv(p.APIKeyEnv, key)
	if a.Persist {
		if err := config.SaveProviderKey(s.app.Config().UserConfigFile(), a.ProviderID, key); err != nil {
			return err
		}
	}
	return s.app.Reload()
}
