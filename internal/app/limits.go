package app

import (
	"fmt"
	"math"
	"time"
)

// Limits are a run's bounds as the command line gives them (arbor run,
// resume and mcp).
type Limits struct {
	BudgetUSD   float64
	MaxTokens   int64
	MaxParallel int
	NodeTimeout time.Duration
	MaxTurns    int
}

// Check refuses limits that make no sense (ErrUsage); create is a new
// run's, which also sets its parallelism and node timeout.
func (l Limits) Check(create bool) error {
	switch {
	case math.IsNaN(l.BudgetUSD) || math.IsInf(l.BudgetUSD, 0):
		return fmt.Errorf("%w: --budget must be a finite number of dollars (0 = no limit), not %g", ErrUsage, l.BudgetUSD)
	case l.BudgetUSD < 0:
		return fmt.Errorf("%w: --budget must not be negative (0 = no limit), not %g", ErrUsage, l.BudgetUSD)
	case l.MaxTokens < 0:
		return fmt.Errorf("%w: --max-tokens must not be negative (0 = no limit), not %d", ErrUsage, l.MaxTokens)
	case l.MaxTurns < 0:
		return fmt.Errorf("%w: --max-turns must not be negative (0 = from config), not %d", ErrUsage, l.MaxTurns)
	case create && l.MaxParallel < 1:
		return fmt.Errorf("%w: --max-parallel must be at least 1, not %d", ErrUsage, l.MaxParallel)
	case create && l.NodeTimeout < 0:
		return fmt.Errorf("%w: --node-timeout must not be negative (0 = no limit), not %s", ErrUsage, l.NodeTimeout)
	}
	return nil
}

// CheckPrice refuses a budget in dollars on a model whose price is not
// known (ErrUsage): it could not be enforced.
func CheckPrice(m Model, budget float64) error {
	if budget > 0 && m.Ref.Price == nil {
		return fmt.Errorf("%w: --budget is in dollars, and the price of model %s is unknown, so it cannot be enforced: set providers.%s.models.%s.price in the config, or bound the run with --max-tokens instead",
			ErrUsage, m.Ref.Ref, m.Ref.Provider, m.Ref.Name)
	}
	return nil
}
