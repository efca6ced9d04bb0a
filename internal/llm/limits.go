package llm

// Limits are what a provider takes in one request; a request past one of
// them is refused (HTTP 400), and so is every later request of the
// session, which holds at least as much. 0 means no limit is known.
type Limits struct {
	// MaxTools is the most tools a request may offer.
	MaxTools int
	// MaxImages is the most images a request may hold, in all its
	// messages.
	MaxImages int
}

// Limiter is a Provider that knows its limits.
type Limiter interface{ Limits() Limits }

// LimitsOf returns p's limits, none when it does not say.
func LimitsOf(p Provider) Limits {
	if l, ok := p.(Limiter); ok {
		return l.Limits()
	}
	return Limits{}
}
