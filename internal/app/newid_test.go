package app

import (
	"errors"
	"fmt"
	"testing"

	"github.com/arbor-run/arbor/internal/store"
)

// WithNewID draws again while an id was drawn before, five times at most,
// and passes any other outcome through at once.
func TestWithNewID(t *testing.T) {
	t.Parallel()
	var tried []string
	create := func(conflicts int, other error) func(string) (string, error) {
		tried = nil
		return func(id string) (string, error) {
			tried = append(tried, id)
			if len(tried) <= conflicts {
				return "", fmt.Errorf("insert %s: %w", id, store.ErrConflict)
			}
			return id, other
		}
	}
	got, err := WithNewID(create(2, nil))
	if err != nil || len(tried) != 3 || got != tried[2] {
		t.Fatalf("two conflicts: got %q, %v after %q", got, err, tried)
	}
	if tried[0] == tried[1] && tried[1] == tried[2] {
		t.Errorf("every try drew the same id %q", tried[0])
	}
	if _, err := WithNewID(create(100, nil)); !errors.Is(err, store.ErrConflict) || len(tried) != 5 {
		t.Fatalf("always taken: %v after %d tries, want ErrConflict after 5", err, len(tried))
	}
	boom := errors.New("disk full")
	if _, err := WithNewID(create(0, boom)); !errors.Is(err, boom) || len(tried) != 1 {
		t.Fatalf("another error: %v after %d tries, want it after 1", err, len(tried))
	}
}
