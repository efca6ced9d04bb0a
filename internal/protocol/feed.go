package protocol

import (
	"context"
	"errors"
	"io"
)

// Each hands every line of r to handle and every line error to bad, on
// the caller's goroutine, until the input ends (nil), reading fails (that
// error), handle returns false (nil) or ctx is cancelled (nil). A
// cancellation ends Each at once even while no input arrives: reading
// happens on a goroutine of its own, which then stays blocked in its read
// until the input is closed or the process exits, and hands on nothing
// more.
func (r *Reader) Each(ctx context.Context, handle func(Line) bool, bad func(*LineError)) error {
	lines := r.feed(ctx)
	for {
		var rd read
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case rd, ok = <-lines:
		}
		var le *LineError
		switch {
		case !ok || errors.Is(rd.err, io.EOF): // !ok: ctx was cancelled
			return nil
		case errors.As(rd.err, &le):
			bad(le)
			continue
		case rd.err != nil:
			return rd.err
		}
		if ctx.Err() != nil || !handle(rd.line) {
			return nil
		}
	}
}

// read is one result of Next.
type read struct {
	line Line
	err  error
}

// feed calls r.Next on its own goroutine and sends every result on the
// returned channel, which is closed after the final one (io.EOF or a read
// error). Once ctx is cancelled nothing more is sent, and the channel is
// closed when the pending read returns.
func (r *Reader) feed(ctx context.Context) <-chan read {
	ch := make(chan read)
	go func() {
		defer close(ch)
		for {
			l, err := r.Next()
			if ctx.Err() != nil {
				return
			}
			select {
			case ch <- read{line: l, err: err}:
			case <-ctx.Done():
				return
			}
			var le *LineError
			if err != nil && !errors.As(err, &le) {
				return
			}
		}
	}()
	return ch
}
