package streamjson

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

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
	s.write(systemMessage{Type: "system", Subtype: "auth_required", Reason: "not_configured", SessionID: s.launchSessionID(), UUID: newUUID()})
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
		s.write(systemMessage{Type: "system", Subtype: "auth_ok", SessionID: s.launchSessionID(), UUID: newUUID()})
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

// loginFailure answers, as Claude Code does, a turn of a Claude Agent
// SDK client that cannot be authenticated (it cannot answer
// auth_required): system/init, an assistant message of the
// "<synthetic>" model saying what to set, and a result that is an error
// with that text, which the SDK throws as the query's error.
func (s *Server) loginFailure(err error, start time.Time) {
	id := s.sessionID()
	if id == "" {
		id = s.opts.SessionID
	}
	if id == "" {
		id = newUUID()
	}
	m := s.initMessage(id)
	m.APIKeySource = "none"
	m.Model = s.modelName(s.opts.Model)
	if m.Model == "" {
		m.Model = s.modelName(s.app.Config().Model)
	}
	s.write(m)
	text := err.Error()
	s.write(messageLine{Type: "assistant", SessionID: id, UUID: newUUID(), Message: apiMessage{
		ID: newUUID(), Type: "message", Role: "assistant", Model: "<synthetic>", Content: []apiBlock{{Type: "text", Text: text}},
		StopReason: json.RawMessage(`"stop_sequence"`), StopSequence: json.RawMessage(`""`), Usage: &apiUsage{}}})
	s.write(resultMessage{Type: "result", Subtype: "success", IsError: true, Result: text, StopReason: json.RawMessage(`"stop_sequence"`),
		Errors: []string{text}, SessionID: id, DurationMS: time.Since(start).Milliseconds(), NumTurns: 1,
		PermissionDenials: []permissionDenial{}, ModelUsage: map[string]modelUsage{}, UUID: newUUID()})
}
