package protocol

import (
	"strings"
	"testing"
)

// cycleReader repeats data forever without allocating.
type cycleReader struct {
	data []byte
	off  int
}

func (c *cycleReader) Read(p []byte) (int, error) {
	n := copy(p, c.data[c.off:])
	c.off = (c.off + n) % len(c.data)
	return n, nil
}

func BenchmarkReader(b *testing.B) {
	const lineLen = 1 << 10 // with its newline
	head, tail := `{"type":"send","content":"`, `"}`
	line := head + strings.Repeat("x", lineLen-len(head)-len(tail)-1) + tail + "\n"
	r := NewReader(&cycleReader{data: []byte(strings.Repeat(line, 64))}, 0)

	b.SetBytes(lineLen)
	b.ReportAllocs()
	for b.Loop() {
		if l, err := r.Next(); err != nil || l.Type != "send" {
			b.Fatalf("Next: %+v, %v", l, err)
		}
	}
}
