package app

import (
	"fmt"
	"strings"

	"github.com/arbor-run/arbor/internal/store"
)

// envTraceParent carries the span a process runs under, by the
// OpenTelemetry convention for environment variables as carriers.
const envTraceParent = "TRACEPARENT"

// TraceParent is the W3C traceparent this process was started under
// (TRACEPARENT), for the runs it creates to join that trace; "" when
// unset or malformed (Open warns of the latter).
func (a *App) TraceParent() string {
	if v := strings.TrimSpace(a.getenv(envTraceParent)); store.ValidTraceParent(v) {
		return v
	}
	return ""
}

// checkTraceParent warns when TRACEPARENT is set but malformed.
func (a *App) checkTraceParent() {
	if v := a.getenv(envTraceParent); v != "" && a.TraceParent() == "" {
		a.warnings = append(a.warnings, fmt.Sprintf("%s=%q is not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>): runs start traces of their own", envTraceParent, v))
	}
}
