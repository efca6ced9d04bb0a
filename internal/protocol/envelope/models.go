package envelope

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// models answers the models command. A pool switch changes the agent's
// model, so it waits on the runner for the running turn to end.
func (s *server) models(c modelsCmd) error {
	switch c.Action {
	case "status":
		s.wire.write(typeModelsResponse, 0, modelsResponse{OK: true, Status: s.modelStatus()})
	case "set_current_model_pool":
		return s.submit("model", func(ctx context.Context) { s.wire.write(typeModelsResponse, 0, s.setPool(ctx, c.Pool)) })
	default:
		s.wire.write(typeModelsResponse, 0, modelsResponse{
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

// setPool switches the session's agent to the first model of the pool.
// It runs on the runner.
func (s *server) setPool(ctx context.Context, name string) modelsResponse {
	if ctx.Err() != nil {
		return modelsResponse{Message: "the server is stopping"}
	}
	refs, err := s.app.Config().Pool(name)
	if err != nil {
		return modelsResponse{Message: err.Error()}
	}
	if len(refs) == 0 {
		return modelsResponse{Message: fmt.Sprintf("pool %q has no models", name)}
	}
	m, err := s.app.Model(refs[0].Ref)
	if err != nil {
		return modelsResponse{Message: fmt.Sprintf("pool %q: %v", name, err)}
	}
	sess := s.current()
	sess.Agent.SetModel(m.Provider, m.Ref.Name, m.Ref.Ref, m.Ref.Price, m.Ref.ContextWindow)
	sess.Model = m
	s.ctl.mu.Lock()
	s.ctl.model, s.ctl.pool = m.Ref.Ref, name
	s.ctl.mu.Unlock()
	return modelsResponse{OK: true, Message: fmt.Sprintf("switched to pool %s (model %s)", name, m.Ref.Ref), Status: s.modelStatus()}
}
