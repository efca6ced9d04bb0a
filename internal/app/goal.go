package app

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// maxPlanFile bounds a plan file: 1 MiB, the longest goal the other
// front ends take (a headless protocol's input line, an arbor serve
// request body).
const maxPlanFile = 1 << 20

// GoalText is the goal of arbor run's arguments. A lone argument that
// ends in .md or names an existing path is a plan file: it must be a
// readable text file of at most maxPlanFile bytes, so a mistyped name,
// a binary or a huge file is an error, not a goal.
func GoalText(args []string) (string, error) {
	if len(args) == 1 {
		p := args[0]
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.IsDir():
			return "", fmt.Errorf("plan file %s is a directory", p)
		case err == nil && !fi.Mode().IsRegular():
			return "", fmt.Errorf("plan file %s is not a regular file", p)
		case err == nil:
			return readPlan(p)
		case strings.HasSuffix(strings.ToLower(p), ".md") && !strings.ContainsAny(p, " \n"):
			return "", fmt.Errorf("plan file %s: %w (to run a goal that looks like a file name, add words to it)", p, err)
		}
	}
	return strings.Join(args, " "), nil
}

// readPlan reads the plan file p, refusing one that is not UTF-8 text or
// is longer than maxPlanFile; it reads no more than one byte past it.
func readPlan(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", fmt.Errorf("read plan file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPlanFile+1))
	if err != nil {
		return "", fmt.Errorf("read plan file: %w", err)
	}
	if len(b) > maxPlanFile {
		return "", fmt.Errorf("plan file %s is larger than %d MiB, the limit of a goal", p, maxPlanFile>>20)
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return "", fmt.Errorf("plan file %s is not text: it holds a NUL byte (at byte %d)", p, i)
	}
	if !utf8.Valid(b) {
		return "", fmt.Errorf("plan file %s is not text: it is not valid UTF-8 (from byte %d)", p, firstInvalid(b))
	}
	return string(b), nil
}

// firstInvalid is the offset of the first byte of b that does not start
// a valid UTF-8 sequence (len(b) when all do).
func firstInvalid(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}
