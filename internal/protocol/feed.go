package protocol

import (
	"context"
	"errors"
)

// Read is one result of Reader.Next.
type Read struct {
	Line Line
	Err  error
}

// Feed calls r.Next on its own goroutine and sends every result, line
// errors included, on the returned channel, which is closed after the
// final one (io.EOF or a read error). Once ctx is cancelled nothing more
// is sent and the channel is closed when the pending read returns. A
// server selecting on the channel and ctx.Done stops at once on a signal
// even while no input arrives; the goroutine then stays blocked in its
// read until the input is closed or the process exits.
func (r *Reader) Feed(ctx context.Context) <-chan Read {
	ch := make(chan Read)
	go func() {
		defer close(ch)
		for {
			l, err := r.Next()
			if ctx.Err() != nil {
				return
			}
			select {
			case ch <- Read{Line: l, Err: err}:
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
