package streamjson

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// Registry answers, per domain. Each is a typed value marshalled into the
// response's data.
type toolEntry struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
}

type modelEntry struct {
	Ref         string     `json:"ref"`
	Provider    string     `json:"provider"`
	Type        string     `json:"type"`
	Price       *llm.Price `json:"price,omitempty"`
	ContextSize int64      `json:"context_window,omitempty"`
}

type permissionsEntry struct {
	Mode  string   `json:"mode"`
	Rules []string `json:"rules"`
}

type nameParams struct {
	Name string `json:"name"`
	ID   string `json:"id"`
}

// registry answers a registry_request for the domains tools, models,
// sessions and permissions with the actions list and get.
func (s *Server) registry(ctx context.Context, req registryRequest) {
	if req.Domain == "tools" && s.current() == nil {
		// The tools are the session's: the runner creates it first.
		s.submit("session", func(ctx context.Context) { s.answerRegistry(ctx, req) }, func(err error) {
			s.write(registryResponse{Type: "registry_response", RequestID: req.RequestID, Domain: req.Domain, Action: req.Action, Error: err.Error()})
		})
		return
	}
	s.answerRegistry(ctx, req)
}

func (s *Server) answerRegistry(ctx context.Context, req registryRequest) {
	resp := registryResponse{Type: "registry_response", RequestID: req.RequestID, Domain: req.Domain, Action: req.Action}
	data, err := s.lookup(ctx, req)
	if err != nil {
		resp.Error = err.Error()
	} else {
		resp.Success = true
		resp.Data = data
	}
	s.write(resp)
}

func (s *Server) lookup(ctx context.Context, req registryRequest) (any, error) {
	var p nameParams
	if len(req.Params) > 0 {
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, fmt.Errorf("params: %w", err)
		}
	}
	if req.Action != "list" && req.Action != "get" {
		return nil, fmt.Errorf("unknown action %q (list, get)", req.Action)
	}
	switch req.Domain {
	case "tools":
		sess, err := s.session(ctx)
		if err != nil {
			return nil, err
		}
		var out []toolEntry
		for _, spec := range sess.Tools.Specs() {
			e := toolEntry{Name: spec.Name, Description: spec.Description}
			if req.Action == "get" {
				if spec.Name != p.Name {
					continue
				}
				e.InputSchema = spec.InputSchema
				return e, nil
			}
			out = append(out, e)
		}
		if req.Action == "get" {
			return nil, fmt.Errorf("no tool %q", p.Name)
		}
		return out, nil
	case "models":
		var out []modelEntry
		for name, prov := range s.app.Config().Providers {
			for m, info := range prov.Models {
				e := modelEntry{Ref: name + "/" + m, Provider: name, Type: prov.Type, Price: info.Price, ContextSize: info.ContextWindow}
				if req.Action == "get" && e.Ref == p.Name {
					return e, nil
				}
				out = append(out, e)
			}
		}
		if req.Action == "get" {
			return nil, fmt.Errorf("no model %q", p.Name)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Ref < out[j].Ref })
		return out, nil
	case "sessions":
		if req.Action == "get" {
			return s.app.Store.GetSession(ctx, p.ID)
		}
		ss, err := s.app.Store.ListSessions(ctx, 50)
		return ss, err
	case "permissions":
		e := permissionsEntry{Mode: string(s.app.Permissions.Mode()), Rules: []string{}}
		for _, r := range s.app.Permissions.Rules() {
			e.Rules = append(e.Rules, fmt.Sprintf("%s %s (%s)", r.Action, r.String(), r.Scope))
		}
		return e, nil
	}
	return nil, fmt.Errorf("unknown domain %q (tools, models, sessions, permissions)", req.Domain)
}

var _ = store.ErrNotFound
