package protocol

import (
	"io"
	"runtime"
	"strings"
	"testing"
)

// fillReader is an endless stream of one byte, so a huge input line costs
// the test no memory of its own.
type fillReader byte

func (f fillReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(f)
	}
	return len(p), nil
}

// TestReaderMemoryBounded deliberately does not call t.Parallel: it measures
// the allocations of the whole process, which parallel tests would disturb.
// Top-level tests without t.Parallel run before any parallel test resumes.
func TestReaderMemoryBounded(t *testing.T) {
	const lineLen = 16 << 20
	for _, tc := range []struct {
		name  string
		max   int
		limit uint64
	}{
		// The line buffer grows geometrically up to MaxLine+1 bytes, so
		// reading a line of the maximum size allocates about twice that.
		{"DefaultLimit", 0, 3 * MaxLine},
		{"SmallLimit", 4 << 10, 256 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head, tail := `{"type":"send","content":"`, "\"}\n{\"type\":\"status\"}\n"
			src := &countingReader{r: io.MultiReader(
				strings.NewReader(head), io.LimitReader(fillReader('x'), lineLen), strings.NewReader(tail))}
			r := NewReader(src, tc.max)

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			items := readAll(t, r)
			runtime.ReadMemStats(&after)

			requireCount(t, items, 2)
			requireLineErr(t, items[0], 1, len(head)+lineLen+2, ErrLineTooLong)
			requireLine(t, items[1], 2, "status", `{"type":"status"}`)
			if want := int64(len(head) + lineLen + len(tail)); src.n != want {
				t.Fatalf("read %d of %d input bytes", src.n, want)
			}
			got := after.TotalAlloc - before.TotalAlloc
			t.Logf("reading a %d byte line allocated %d bytes", lineLen, got)
			if got > tc.limit {
				t.Fatalf("reading a %d byte line allocated %d bytes, want at most %d", lineLen, got, tc.limit)
			}
		})
	}
}
