package tool

import (
	"strings"
	"testing"
)

func TestHeadTail(t *testing.T) {
	t.Parallel()

	t.Run("KeepsEverythingUnderTheLimit", func(t *testing.T) {
		t.Parallel()
		h := newHeadTail(10)
		for _, s := range []string{"ab", "cdefgh", "ij"} {
			_, _ = h.Write([]byte(s))
		}
		reqEqual(t, h.String(), "abcdefghij")
	})

	t.Run("KeepsHeadAndTailAcrossWrites", func(t *testing.T) {
		t.Parallel()
		h := newHeadTail(10)
		for _, s := range []string{"abc", "defgh", "ijklmnop", "q", "rstuvwxyz"} {
			n, err := h.Write([]byte(s))
			reqEqual(t, n, len(s))
			reqEqual(t, err, nil)
		}
		reqEqual(t, h.String(), "abcde\n[… 16 bytes truncated …]\nvwxyz")
	})

	t.Run("DoesNotSplitCharacters", func(t *testing.T) {
		t.Parallel()
		h := newHeadTail(8)
		_, _ = h.Write([]byte(strings.Repeat("€", 10))) // 3 bytes each
		got := h.String()
		reqEqual(t, got, "€\n[… 24 bytes truncated …]\n€")
	})
}
