package store_test

import (
	"testing"

	"github.com/arbor-run/arbor/internal/store"
)

func TestNodeState(t *testing.T) {
	t.Parallel()
	terminal := map[store.NodeState]bool{
		store.StatePending: false, store.StateActive: false, store.StateWaiting: false,
		store.StateSynthesizing: false, store.StatePaused: false,
		store.StateComplete: true, store.StateFailed: true, store.StateCancelled: true,
	}
	for s, want := range terminal {
		if !s.Valid() {
			t.Errorf("%q.Valid() = false, want true", s)
		}
		if got := s.Terminal(); got != want {
			t.Errorf("%q.Terminal() = %v, want %v", s, got, want)
		}
	}
	for _, s := range []store.NodeState{"", "done", "Complete", "running"} {
		if s.Valid() || s.Terminal() {
			t.Errorf("%q: Valid() = %v, Terminal() = %v, want false, false", s, s.Valid(), s.Terminal())
		}
	}
}

func TestNodeKind(t *testing.T) {
	t.Parallel()
	root := map[store.NodeKind]bool{store.KindGoal: true, store.KindHost: true, store.KindTask: false, store.KindAsk: false}
	for k, want := range root {
		if !k.Valid() {
			t.Errorf("%q.Valid() = false, want true", k)
		}
		if got := k.Root(); got != want {
			t.Errorf("%q.Root() = %v, want %v", k, got, want)
		}
	}
	for _, k := range []store.NodeKind{"", "spawn", "fork", "Task"} {
		if k.Valid() || k.Root() {
			t.Errorf("%q: Valid() = %v, Root() = %v, want false, false", k, k.Valid(), k.Root())
		}
	}
}

func TestRunStatus(t *testing.T) {
	t.Parallel()
	terminal := map[store.RunStatus]bool{
		store.RunRunning: false, store.RunInterrupted: false,
		store.RunComplete: true, store.RunFailed: true, store.RunCancelled: true, store.RunBudget: true,
	}
	for s, want := range terminal {
		if !s.Valid() {
			t.Errorf("%q.Valid() = false, want true", s)
		}
		if got := s.Terminal(); got != want {
			t.Errorf("%q.Terminal() = %v, want %v", s, got, want)
		}
	}
	for _, s := range []store.RunStatus{"", "pending", "budget", "done"} {
		if s.Valid() || s.Terminal() {
			t.Errorf("%q: Valid() = %v, Terminal() = %v, want false, false", s, s.Valid(), s.Terminal())
		}
	}
}

func TestSessionStatus(t *testing.T) {
	t.Parallel()
	for _, s := range []store.SessionStatus{store.SessionActive, store.SessionIdle, store.SessionInterrupted, store.SessionFailed} {
		if !s.Valid() {
			t.Errorf("%q.Valid() = false, want true", s)
		}
	}
	for _, s := range []store.SessionStatus{"", "sleeping", "running", "Idle"} {
		if s.Valid() {
			t.Errorf("%q.Valid() = true, want false", s)
		}
	}
}

func TestIntentStatus(t *testing.T) {
	t.Parallel()
	terminal := map[store.IntentStatus]bool{store.IntentStarted: false, store.IntentFinished: true}
	for s, want := range terminal {
		if !s.Valid() {
			t.Errorf("%q.Valid() = false, want true", s)
		}
		if got := s.Terminal(); got != want {
			t.Errorf("%q.Terminal() = %v, want %v", s, got, want)
		}
	}
	for _, s := range []store.IntentStatus{"", "running", "done"} {
		if s.Valid() || s.Terminal() {
			t.Errorf("%q: Valid() = %v, Terminal() = %v, want false, false", s, s.Valid(), s.Terminal())
		}
	}
}
