//go:build !lean

package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/telemetry"
)

// exporter is the App's OpenTelemetry exporter (nil while none runs).
type exporter = *telemetry.Exporter

// startTelemetry subscribes the OpenTelemetry export to the bus when the
// config or the OTEL_* variables name an endpoint; otherwise it does
// nothing at all (no SDK, no subscriber). Closing the App flushes the
// spans of what it saw, before the store closes (the last run's spans
// are read from it).
func (a *App) startTelemetry(ctx context.Context, cfg *config.Config) error {
	a.checkTraceParent()
	c := cfg.Telemetry
	s := telemetry.Settings{Endpoint: c.Endpoint, Protocol: c.Protocol, Headers: c.Headers,
		ServiceName: c.ServiceName, CaptureContent: c.CaptureContent}
	if !s.Enabled(a.getenv) {
		return nil
	}
	e, err := telemetry.Start(ctx, s, a.getenv)
	if err != nil {
		return err
	}
	a.telemetry = e
	t := telemetry.Subscribe(a.Bus, e, a.Store)
	a.onClose(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = t.Close(ctx)
		_ = e.Shutdown(ctx)
	})
	return nil
}

// ExportTrace sends stored run id's trace to the configured endpoint
// (arbor trace), from the recorded timings, through the App's exporter;
// it returns the number of spans sent. Without an endpoint it fails with
// ErrUsage.
func (a *App) ExportTrace(ctx context.Context, id string) (int, error) {
	if a.telemetry == nil {
		return 0, fmt.Errorf("%w: no OpenTelemetry endpoint: set OTEL_EXPORTER_OTLP_ENDPOINT or telemetry.endpoint (see docs/observability.md)", ErrUsage)
	}
	n, err := a.telemetry.Export(ctx, a.Store, id)
	return n, errors.Join(err, a.telemetry.Flush(context.WithoutCancel(ctx)))
}
