package tool

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// headTail is an io.Writer that keeps the first and the last limit/2 bytes
// of everything written and counts the rest, so a command that prints
// gigabytes costs a fixed amount of memory and the model still sees how it
// started and how it ended. It is not safe for concurrent use; exec.Cmd
// serializes writes when Stdout and Stderr are the same writer.
type headTail struct {
	half  int
	head  []byte
	tail  []byte // the last bytes written after head filled, at most half
	total int64
}

func newHeadTail(limit int) *headTail {
	return &headTail{half: limit / 2}
}

func (h *headTail) Write(p []byte) (int, error) {
	n := len(p)
	h.total += int64(n)
	if room := h.half - len(h.head); room > 0 {
		take := min(room, len(p))
		h.head = append(h.head, p[:take]...)
		p = p[take:]
	}
	if len(p) >= h.half {
		h.tail = append(h.tail[:0], p[len(p)-h.half:]...)
		return n, nil
	}
	if over := len(h.tail) + len(p) - h.half; over > 0 {
		h.tail = h.tail[:copy(h.tail, h.tail[over:])]
	}
	h.tail = append(h.tail, p...)
	return n, nil
}

// String returns the output, with a visible note where bytes were dropped.
// Cuts that split a UTF-8 character are moved to the character boundary.
func (h *headTail) String() string {
	dropped := h.total - int64(len(h.head)) - int64(len(h.tail))
	if dropped == 0 {
		return strings.ToValidUTF8(string(h.head)+string(h.tail), "\uFFFD")
	}
	head, tail := h.head, h.tail
	for i := len(head) - 1; i >= 0 && i >= len(head)-utf8.UTFMax; i-- {
		if utf8.RuneStart(head[i]) {
			if !utf8.FullRune(head[i:]) {
				head = head[:i]
			}
			break
		}
	}
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	dropped += int64(len(h.head)-len(head)) + int64(len(h.tail)-len(tail))
	return strings.ToValidUTF8(string(head), "\uFFFD") +
		fmt.Sprintf("\n[… %d bytes truncated …]\n", dropped) +
		strings.ToValidUTF8(string(tail), "\uFFFD")
}
