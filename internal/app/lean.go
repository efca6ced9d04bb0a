//go:build lean

package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/store"
)

// A lean build (go build -tags lean, docs/headless-envelope.md) links
// neither the OpenTelemetry SDK nor the PostgreSQL store: a config that
// asks for either is refused, naming the tag, rather than ignored.

// exporter stands for the OpenTelemetry exporter, which this build has
// not: it is always nil.
type exporter = *struct{}

// errLean says what a lean build lacks and how to get it.
func errLean(what, asked string) error {
	return fmt.Errorf("%w: this arbor was built with -tags lean, without %s, and %s: build it without the tag to use it", ErrUsage, what, asked)
}

func (a *App) startTelemetry(_ context.Context, cfg *config.Config) error {
	a.checkTraceParent()
	if strings.EqualFold(strings.TrimSpace(a.getenv("OTEL_SDK_DISABLED")), "true") {
		return nil
	}
	if cfg.Telemetry.Endpoint != "" || a.getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || a.getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" {
		return errLean("OpenTelemetry", "an endpoint is set (telemetry.endpoint or OTEL_EXPORTER_OTLP_*)")
	}
	return nil
}

// ExportTrace is arbor trace's, which this build has not.
func (a *App) ExportTrace(context.Context, string) (int, error) {
	return 0, errLean("OpenTelemetry", "a trace export was asked for")
}

func openPostgres(context.Context, string) (store.Store, error) {
	return nil, errLean("the PostgreSQL store", "the store is a postgres:// URL")
}
