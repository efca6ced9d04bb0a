package tree

import "fmt"

// stateError is an operation its node's or run's state does not allow:
// its text says why on its own, and it is ErrBadState.
type stateError struct{ msg string }

func (e *stateError) Error() string        { return e.msg }
func (e *stateError) Is(target error) bool { return target == ErrBadState }

// badState is a stateError; its message is said without ErrBadState's
// generic text ("#1 is a goal node, not an ask", not "…: not allowed in
// this state").
func badState(format string, args ...any) error {
	return &stateError{fmt.Sprintf(format, args...)}
}
