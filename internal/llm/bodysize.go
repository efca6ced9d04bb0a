package llm

import "sync/atomic"

// BodySize sizes a provider's request-body buffers: it keeps the size of
// the last body's messages and hints the next one's with room for the
// turn that came since, so the buffer is made once. A buffer one byte
// short grows to twice its size, which was two thirds of what a turn
// allocated (docs/benchmarks.md, "Turn latency, fourth round"). A nil
// *BodySize hints 4 KiB and keeps nothing. Its methods are safe for
// concurrent use.
type BodySize struct{ last atomic.Int64 }

// Hint is the room to make for the next body's messages.
func (s *BodySize) Hint() int {
	if s == nil {
		return 4096
	}
	n := int(s.last.Load())
	return n + n/4 + 2048
}

// Saw records the size of the messages of a body just encoded.
func (s *BodySize) Saw(n int) {
	if s != nil {
		s.last.Store(int64(n))
	}
}

// Last is the size Saw recorded last.
func (s *BodySize) Last() int {
	if s == nil {
		return 0
	}
	return int(s.last.Load())
}
