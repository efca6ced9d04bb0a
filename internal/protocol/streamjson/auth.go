package streamjson

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"gopkg.in/yaml.v3"
)

// authenticate asks the client for credentials when no model can be used
// (auth_required), applies the answer (and, with persist, saves it to the
// user config with mode 0600), then says auth_ok. Input lines that arrive
// meanwhile are handled or queued as usual. It reports success.
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
	s.write(controlRequestOut{Type: "control_request", RequestID: "auth-init", Request: outRequest{
		Subtype: "auth_required", Reason: "not_configured", Providers: providers,
	}})
	select {
	case <-ctx.Done():
		return false
	case <-s.inputDone:
		return false
	case a := <-ch:
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
		if err := persistKey(s.app.Config().UserConfigFile(), a.ProviderID, key); err != nil {
			return err
		}
	}
	return s.app.Reload()
}

// persistKey stores key as providers.<id>.api_key in the user config file,
// keeping what else it holds, with mode 0600.
func persistKey(path, id, key string) error {
	if path == "" {
		return errors.New("no user config directory to persist credentials in")
	}
	doc := map[string]any{}
	if b, err := os.ReadFile(path); err == nil {
		if err := yaml.Unmarshal(b, &doc); err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	providers, _ := doc["providers"].(map[string]any)
	if providers == nil {
		providers = map[string]any{}
	}
	entry, _ := providers[id].(map[string]any)
	if entry == nil {
		entry = map[string]any{}
	}
	entry["api_key"] = key
	providers[id] = entry
	doc["providers"] = providers
	b, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return err
	}
	return os.Chmod(path, 0o600)
}
