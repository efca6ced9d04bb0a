package project

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadCappedTellsACutFromBadBytes: bytes that are not UTF-8 inside a
// small file are shown as U+FFFD (a run of them as one) and are not taken for a cut (before, the
// file's end was dropped and reported as over the cap); a file over the
// cap is cut before a rune the cap split.
func TestReadCappedTellsACutFromBadBytes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	small := filepath.Join(dir, "CLAUDE.local.md")
	if err := os.WriteFile(small, []byte("be brief \xff\xfe and kind"), 0o644); err != nil {
		t.Fatal(err)
	}
	text, size, cut, err := readCapped(small, 1000)
	if err != nil || cut || size != 20 || text != "be brief \uFFFD and kind" {
		t.Fatalf("small file: %q, size %d, cut %v, %v", text, size, cut, err)
	}
	big := filepath.Join(dir, "AGENTS.md")
	if err := os.WriteFile(big, []byte(strings.Repeat("a", 9)+"é and more"), 0o644); err != nil { // é is 2 bytes: the cap at 10 splits it
		t.Fatal(err)
	}
	text, _, cut, err = readCapped(big, 10)
	if err != nil || !cut || text != strings.Repeat("a", 9) {
		t.Fatalf("big file: %q, cut %v, %v", text, cut, err)
	}
	text, _, cut, err = readCapped(big, 11)
	if err != nil || !cut || text != strings.Repeat("a", 9)+"é" {
		t.Fatalf("big file cut after a whole rune: %q, cut %v, %v", text, cut, err)
	}
}
