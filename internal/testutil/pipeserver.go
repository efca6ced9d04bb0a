package testutil

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// ErrNoLine is returned by PipeServer.Next when no line arrived in time.
var ErrNoLine = errors.New("no output line in time")

// PipeServer runs a line protocol server over in-memory pipes with no
// *testing.T of its own, so that it can outlive one test: a fuzz target
// keeps one per worker process and feeds it input after input, as a
// client feeds one long-lived process (starting a server per input costs
// a session in the store, about a millisecond). Send never blocks, the
// server's writes never block, and every wait has a bound.
type PipeServer struct {
	pr    *io.PipeReader
	sends chan []byte
	done  chan struct{}
	err   error // serve's result, set before done is closed

	mu      sync.Mutex
	partial []byte
	lines   [][]byte
	more    chan struct{} // closed and replaced when a line is added
}

// StartPipeServer runs serve(in, out) on its own goroutine.
func StartPipeServer(serve func(in io.Reader, out io.Writer) error) *PipeServer {
	pr, pw := io.Pipe()
	s := &PipeServer{pr: pr, sends: make(chan []byte, 64), done: make(chan struct{}), more: make(chan struct{})}
	go func() {
		// One writer, so chunks reach the server in the order sent; the
		// input ends after the last one. A write the server never reads
		// (it stopped reading) is released by closing the read end.
		for b := range s.sends {
			if _, err := pw.Write(b); err != nil {
				break
			}
		}
		pw.Close()
		for range s.sends {
		}
	}()
	go func() {
		s.err = serve(pr, (*pipeOut)(s))
		close(s.done)
	}()
	return s
}

// pipeOut is the server's output: it splits what the server writes into
// lines and queues them; it never blocks.
type pipeOut PipeServer

func (o *pipeOut) Write(p []byte) (int, error) {
	s := (*PipeServer)(o)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.partial = append(s.partial, p...)
	added := false
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			break
		}
		s.lines = append(s.lines, bytes.Clone(s.partial[:i]))
		s.partial = s.partial[i+1:]
		added = true
	}
	if len(s.partial) == 0 {
		s.partial = nil
	}
	if added {
		close(s.more)
		s.more = make(chan struct{})
	}
	return len(p), nil
}

// Send queues b as the server's next input bytes.
func (s *PipeServer) Send(b []byte) { s.sends <- b }

// Next returns the next output line (without its newline). It returns
// io.EOF when the server has returned and every line was read, and
// ErrNoLine when no line came within d.
func (s *PipeServer) Next(d time.Duration) ([]byte, error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		s.mu.Lock()
		if len(s.lines) > 0 {
			l := s.lines[0]
			s.lines[0] = nil
			s.lines = s.lines[1:]
			s.mu.Unlock()
			return l, nil
		}
		more := s.more
		s.mu.Unlock()
		select {
		case <-more:
		case <-s.done:
			s.mu.Lock()
			n, rest := len(s.lines), bytes.Clone(s.partial)
			s.mu.Unlock()
			if n > 0 {
				continue
			}
			if len(rest) > 0 {
				return nil, fmt.Errorf("output ends in a partial line %q", rest)
			}
			return nil, io.EOF
		case <-timer.C:
			return nil, ErrNoLine
		}
	}
}

// Done is closed when the server has returned.
func (s *PipeServer) Done() <-chan struct{} { return s.done }

// Close ends the input and waits at most d for the server to return; it
// returns the server's error, or an error saying it did not return. The
// lines not read yet stay readable with Next.
func (s *PipeServer) Close(d time.Duration) error {
	close(s.sends) // the writer closes the input after the queued chunks
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-s.done:
		s.pr.Close() // releases a write the server never read
		return s.err
	case <-timer.C:
		s.pr.Close()
		return fmt.Errorf("the server did not return within %s of its input's end", d)
	}
}
