package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrStopped refuses to start a Cluster that was stopped.
var ErrStopped = errors.New("cluster stopped")

// service is the started state of a Cluster; mu guards every field but
// wg, and is held by Start (so a concurrent Stop waits for it to finish)
// but not by Stop's waiting: a second Stop waits on stopped instead.
type service struct {
	mu      sync.Mutex
	started bool
	stopped chan struct{} // closed when Stop returned; nil until Stop
	stopErr error         // written before stopped is closed
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// Start starts working jobs: River's client, the reaper and the control
// listener (listening when Start returns). An insert-only Cluster has
// nothing to start. Starting again is a no-op; after Stop it is
// ErrStopped.
func (c *Cluster) Start(ctx context.Context) error {
	s := &c.svc
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.stopped != nil:
		return ErrStopped
	case s.started || !c.o.working():
		return nil
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ready := make(chan error, 1)
	s.wg.Go(func() { c.listenControl(lctx, ready) })
	if err := <-ready; err != nil {
		cancel()
		s.wg.Wait()
		return fmt.Errorf("start cluster: control listener: %w", err)
	}
	if err := c.client.Start(ctx); err != nil {
		cancel()
		s.wg.Wait()
		return fmt.Errorf("start cluster: %w", err)
	}
	s.wg.Go(func() { c.reapLoop(lctx) })
	s.started, s.cancel = true, cancel
	return nil
}

// Stop stops taking jobs, lets running units finish (River's soft stop;
// when ctx ends first their contexts are cancelled and their nodes come
// back through the reaper), then stops the reaper and the listener and
// waits for every goroutine. Calling it again waits for the first call
// and returns its result.
func (c *Cluster) Stop(ctx context.Context) error {
	s := &c.svc
	s.mu.Lock()
	if s.stopped != nil {
		done := s.stopped
		s.mu.Unlock()
		<-done
		return s.stopErr
	}
	s.stopped = make(chan struct{})
	started, cancel := s.started, s.cancel
	s.mu.Unlock()
	defer close(s.stopped)
	if !started {
		return nil
	}
	err := c.client.Stop(ctx)
	if err != nil && ctx.Err() != nil {
		err = c.client.StopAndCancel(context.WithoutCancel(ctx))
	}
	cancel()
	s.wg.Wait()
	if err != nil {
		s.stopErr = fmt.Errorf("stop cluster: %w", err)
	}
	return s.stopErr
}
