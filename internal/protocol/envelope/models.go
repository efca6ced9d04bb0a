package envelope

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// models answers the models command. A pool switch is answered at once:
// the agent takes the new model from its next model request, also while a
// turn runs. As in Chord, a switch made while nothing runs ends with an
// idle (suppress_user_notification true unless an agent ran since the
// last idle); one made during work leaves the idle to that work.
func (s *server) models(c modelsCmd) error {
	switch c.Action {
	case "status":
		s.wire.write(typeModelsResponse, 0, modelsResponse{OK: true, Status: s.modelStatus()})
	case "set_current_model_pool":
		r := s.setPool(c.Pool)
		s.wire.write(typeModelsResponse, 0, r)
		if r.OK {
			s.ctl.mu.Lock()
			if s.ctl.queued == 0 && !s.ctl.active && !s.wire.get().busy {
				s.submitInternal("model", s.navigation(false, func(context.Context) error { return nil }))
			}
			s.ctl.mu.Unlock()
		}
	default:
		s.wire.write(typeModelsResponse, 0, modelsResponse{Status: s.modelStatus(),
			Message: fmt.Sprintf("unknown models action %q (want status or set_current_model_pool)", c.Action),
		})
	}
	return nil
}

// modelStatus is the text snapshot of /models status: the current model,
// its pool and every configured pool with its refs in fallback order.
func (s *server) modelStatus() string {
	s.ctl.mu.Lock()
	model, pool := s.ctl.model, s.ctl.pool
	s.ctl.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "Model: %s\n", model)
	if pool == "" {
		pool = "none"
	}
	fmt.Fprintf(&b, "Model pool: %s\n", pool)
	pools := s.app.Config().Pools
	if len(pools) == 0 {
		b.WriteString("Pools: no pools configured\n")
		return b.String()
	}
	b.WriteString("Pools:\n")
	names := make([]string, 0, len(pools))
	for name := range pools {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(&b, "  %s: %s\n", name, strings.Join(pools[name], ", "))
	}
	return b.String()
}

// setPool switches the session's agent to the first model of the pool,
// from its next model request (Agent.SetModel may be called while a turn
// runs). The sessions opened later take ctl.model. A failure carries the
// current status, as a success does.
func (s *server) setPool(name string) modelsResponse {
	name = strings.TrimSpace(name)
	if name == "" {
		return modelsResponse{Message: "models set_current_model_pool requires pool", Status: s.modelStatus()}
	}
	refs, err := s.app.Config().Pool(name)
	if err != nil {
		return modelsResponse{Message: err.Error(), Status: s.modelStatus()}
	}
	if len(refs) == 0 {
		return modelsResponse{Message: fmt.Sprintf("pool %q has no models", name), Status: s.modelStatus()}
	}
	m, err := s.app.Model(refs[0].Ref)
	if err != nil {
		return modelsResponse{Message: fmt.Sprintf("pool %q: %v", name, err), Status: s.modelStatus()}
	}
	s.ctl.mu.Lock()
	s.ctl.sess.Agent.SetModel(m.Provider, m.Ref.Name, m.Ref.Ref, m.Ref.Price, m.Ref.ContextWindow)
	s.ctl.model, s.ctl.pool = m.Ref.Ref, name
	s.ctl.mu.Unlock()
	return modelsResponse{OK: true, Message: fmt.Sprintf("switched to pool %s (model %s)", name, m.Ref.Ref), Status: s.modelStatus()}
}
