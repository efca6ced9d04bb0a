package tool

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"unicode/utf8"
)

// binarySniffBytes is how much of a file is inspected to decide whether it
// is text.
const binarySniffBytes = 8000

// pathError words a file system error about the path the model gave.
func pathError(given string, err error) Result {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Errorf("not found: %s", given)
	case errors.Is(err, fs.ErrPermission):
		return Errorf("permission denied: %s", given)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return Errorf("cannot %s %s: %v", pe.Op, given, pe.Err)
	}
	return Errorf("%s: %v", given, err)
}

// looksBinary reports whether sample (the start of a file) is not text: it
// holds a NUL byte, or more than 10% of it is not valid UTF-8.
func looksBinary(sample []byte) bool {
	if bytes.IndexByte(sample, 0) >= 0 {
		return true
	}
	invalid := 0
	for i := 0; i < len(sample); {
		r, size := utf8.DecodeRune(sample[i:])
		// A rune cut off by the end of the sample is not evidence.
		if r == utf8.RuneError && size == 1 && len(sample)-i >= utf8.UTFMax {
			invalid++
		}
		i += size
	}
	return invalid*10 > len(sample)
}

// sniffBinary peeks at the start of br without consuming it.
func sniffBinary(br *bufio.Reader) (bool, error) {
	sample, err := br.Peek(binarySniffBytes)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return false, err
	}
	return looksBinary(sample), nil
}

// readLine reads one line from br without its line ending. At most keep
// bytes of the line are returned; the rest is consumed and counted in
// dropped, so one enormous line cannot exhaust memory. It returns io.EOF only
// when no line is left.
func readLine(br *bufio.Reader, keep int) (line []byte, dropped int, err error) {
	read := 0
	for {
		chunk, err := br.ReadSlice('\n')
		read += len(chunk)
		if err == nil {
			chunk = chunk[:len(chunk)-1]
		}
		take := min(max(keep-len(line), 0), len(chunk))
		line = append(line, chunk[:take]...)
		dropped += len(chunk) - take
		switch {
		case err == nil:
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if read == 0 {
				return nil, 0, io.EOF
			}
		default:
			return nil, 0, err
		}
		break
	}
	if dropped == 0 {
		line = bytes.TrimSuffix(line, []byte("\r"))
	}
	return line, dropped, nil
}

// cutRunes returns s cut to at most n runes, and whether it was cut.
func cutRunes(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos], true
		}
		i++
	}
	return s, false
}

// plural returns "1 line" or "3 lines".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
