package sqlite

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/storetest"
)

// The dialects' shared benchmarks (storetest/bench.go) on a real file: a
// commit is a WAL transaction with synchronous=NORMAL.

func openBench(b *testing.B) store.Store {
	b.Helper()
	st, err := Open(b.Context(), filepath.Join(b.TempDir(), "arbor.db"))
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

// BenchmarkOpenNew opens and closes a store on a new file: what the first
// run on a machine costs, and every store a test opens.
func BenchmarkOpenNew(b *testing.B) {
	dir := b.TempDir()
	n := 0
	for b.Loop() {
		n++
		st, err := Open(b.Context(), filepath.Join(dir, strconv.Itoa(n)+".db"))
		if err != nil {
			b.Fatal(err)
		}
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
