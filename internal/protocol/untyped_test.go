package protocol_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/protocol"
)

// TestUntyped: an Untyped reader takes objects without a type field (as
// JSON-RPC's) and still refuses what is no object.
func TestUntyped(t *testing.T) {
	t.Parallel()
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize"}` + "\n" + `{"type":"user"}` + "\n" + `[1]` + "\n" + `nope` + "\n" + `{"type":3}` + "\n"
	r := protocol.NewReader(strings.NewReader(in), 0).Untyped()
	l, err := r.Next()
	if err != nil || l.Type != "" || string(l.Raw) != `{"jsonrpc":"2.0","id":1,"method":"initialize"}` {
		t.Fatalf("line 1 = %+v, %v; want the untyped object", l, err)
	}
	if l, err = r.Next(); err != nil || l.Type != "user" {
		t.Fatalf("line 2 = %+v, %v; want type user", l, err)
	}
	if _, err = r.Next(); !errors.Is(err, protocol.ErrNotObject) {
		t.Fatalf("line 3: %v; want ErrNotObject", err)
	}
	if _, err = r.Next(); !errors.Is(err, protocol.ErrInvalidJSON) {
		t.Fatalf("line 4: %v; want ErrInvalidJSON", err)
	}
	if l, err = r.Next(); err != nil || l.Type != "" {
		t.Fatalf("line 5 = %+v, %v; want accepted, untyped", l, err)
	}
	if _, err = r.Next(); err != io.EOF {
		t.Fatalf("end: %v; want io.EOF", err)
	}
	// A typed reader still refuses an object without a type.
	if _, err := protocol.NewReader(strings.NewReader(`{"id":1}`+"\n"), 0).Next(); !errors.Is(err, protocol.ErrNoType) {
		t.Fatalf("typed reader: %v; want ErrNoType", err)
	}
}
