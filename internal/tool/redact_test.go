package tool

import (
	"strings"
	"testing"
)

// TestRedactAcrossACut: a secret in output a command printed whole is
// replaced; one that the head-and-tail cut went through leaves no piece
// of it (of minFragment bytes or more) on either side of the cut's note.
func TestRedactAcrossACut(t *testing.T) {
	t.Parallel()
	const secret = "sk-live-0123456789abcdef"
	for cut := 1; cut < len(secret); cut++ {
		h := newHeadTail(64)
		// The head holds 32 bytes: the secret starts cut bytes before its end.
		h.Write([]byte(strings.Repeat("a", 32-cut) + secret + strings.Repeat("b", 100) + "key=" + secret + "\n"))
		got := Redact(h.String(), []string{secret})
		for k := minFragment; k < len(secret); k++ {
			if strings.Contains(got, secret[:k]+"\n[…") || strings.Contains(got, "…]\n"+secret[len(secret)-k:]) {
				t.Fatalf("cut %d: a piece of %d bytes survived: %q", cut, k, got)
			}
		}
		if !strings.HasSuffix(got, "key=[REDACTED]\n") {
			t.Fatalf("cut %d: the whole secret in the tail: %q", cut, got)
		}
		// The tail holds 32 bytes: the secret ends cut bytes into it.
		h = newHeadTail(64)
		h.Write([]byte(strings.Repeat("a", 100) + secret + strings.Repeat("c", 32-cut)))
		got = Redact(h.String(), []string{secret})
		for k := minFragment; k < len(secret); k++ {
			if strings.Contains(got, "…]\n"+secret[len(secret)-k:]) {
				t.Fatalf("cut %d: a piece of %d bytes survived after the note: %q", cut, k, got)
			}
		}
	}
	if got := Redact("no cut, "+secret, []string{secret}); got != "no cut, [REDACTED]" {
		t.Fatalf("plain: %q", got)
	}
	if got := Redact("abcdefgh", nil); got != "abcdefgh" {
		t.Fatalf("no secrets: %q", got)
	}
}
