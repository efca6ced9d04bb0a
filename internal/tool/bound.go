package tool

import (
	"context"
	"encoding/json"
)

// Binder makes the Tool of one value of B: a Bound, whose one tool serves
// every value.
type Binder[B any] interface {
	Bind(b B) Tool
}

// Bound is a tool like New's whose run takes, besides its arguments, a
// value it is bound to (Bind): a tree run's tools, bound to the node that
// calls them. Built once, it shares its schemas and its run function among
// all the tools bound from it; a bound tool is one small allocation
// where New made a tool, the closure it ran and its wrappers for every
// node.
type Bound[A, B any] struct {
	t          *typed[A] // its info and schemas; its run is unused
	run        func(ctx context.Context, call Call, b B, args A) Result
	idempotent bool
}

// NewBound returns the Bound tool name; New says how its arguments A are
// described and checked. New panics when A is not a struct.
func NewBound[A, B any](name, description string, kind Kind, run func(ctx context.Context, call Call, b B, args A) Result) *Bound[A, B] {
	t := New[A](name, description, kind, nil).(*typed[A])
	return &Bound[A, B]{t: t, run: run}
}

// Idempotent marks the tools bound from t as Idempotent marks a tool; it
// returns t, and must be called before t is bound.
func (t *Bound[A, B]) Idempotent() *Bound[A, B] {
	t.idempotent = true
	return t
}

// Bind returns the tool t runs with b.
func (t *Bound[A, B]) Bind(b B) Tool { return &bound[A, B]{t: t, b: b} }

type bound[A, B any] struct {
	t *Bound[A, B]
	b B
}

func (x *bound[A, B]) Info() Info {
	info := x.t.t.Info()
	info.Idempotent = x.t.idempotent
	return info
}

func (x *bound[A, B]) Name() string { return x.t.t.Name() }

func (x *bound[A, B]) Target(input json.RawMessage) (Target, error) { return x.t.t.Target(input) }

// Run is typed's Run, with b.
func (x *bound[A, B]) Run(ctx context.Context, call Call) (res Result) {
	args, err := x.t.t.decode(call.Input)
	if err != nil {
		return Result{Content: err.Error(), IsError: true}
	}
	defer func() {
		if p := recover(); p != nil {
			res = Errorf("%s failed unexpectedly: %v", x.t.t.info.Name, p)
		}
	}()
	return x.t.run(ctx, call, x.b, args)
}
