package envelope_test

import (
	"context"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/store/sqlite"
)

// A fresh session's start and turns write the store and never read it
// back, so the SQLite store opens none of its read connections: each
// would hold its own copy of the schema and a page cache in every
// session of a gateway (docs/benchmarks.md, issue #38's eighth round).
func TestFreshSessionOpensNoReadConnection(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "one"}, llmtest.Turn{Text: "two"})
	defer srv.Close()
	a, _, ws := openApp(t, srv, nil)
	st, ok := a.Store.(*sqlite.Store)
	if !ok {
		t.Fatalf("store is %T, not SQLite", a.Store)
	}
	b, ready := serveApp(t, a, ws)
	for _, text := range []string{"first", "second"} {
		b.Send(sendText(text))
		b.Next(typ("idle"))
	}
	if n := st.ReadConns(); n != 0 {
		t.Fatalf("a fresh session with two turns opened %d read connections, want none", n)
	}
	// What the count sees: a read opens one.
	if _, err := st.GetSession(context.Background(), ready.P.SessionID); err != nil {
		t.Fatal(err)
	}
	if n := st.ReadConns(); n != 1 {
		t.Fatalf("after one read: %d read connections, want 1", n)
	}
	b.Close()
}
