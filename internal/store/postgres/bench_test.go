package postgres

import (
	"testing"

	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/postgres/pgtest"
	"github.com/arbor-run/arbor/internal/store/storetest"
)

// The dialects' shared benchmarks (storetest/bench.go) on the test server
// (a throwaway one runs with fsync=off: these figures are the round trips
// and the server's work, not a disk's); a commit also sends its change
// notification.

func openBench(b *testing.B) store.Store {
	b.Helper()
	st, err := Open(b.Context(), pgtest.DSN(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	return st
}

func BenchmarkAppendMessage(b *testing.B)    { storetest.BenchmarkAppendMessage(b, openBench) }
func BenchmarkMessagesLoad(b *testing.B)     { storetest.BenchmarkMessagesLoad(b, openBench) }
func BenchmarkCommitTransition(b *testing.B) { storetest.BenchmarkCommitTransition(b, openBench) }
func BenchmarkParallelSteps(b *testing.B)    { storetest.BenchmarkParallelSteps(b, openBench) }
func BenchmarkCommitSpawns(b *testing.B)     { storetest.BenchmarkCommitSpawns(b, openBench) }
