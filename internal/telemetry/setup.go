package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Settings are the telemetry section of arbor's config (config.Telemetry,
// copied by app so this package never reads the config file).
type Settings struct {
	Endpoint       string
	Protocol       string // "http/protobuf" (default) or "grpc"
	Headers        map[string]string
	ServiceName    string
	CaptureContent bool
	// Version is arbor's, for service.version.
	Version string
}

// The standard variables, which take precedence over Settings (the SDK's
// exporters read the OTEL_EXPORTER_OTLP_* ones themselves).
const (
	envDisabled       = "OTEL_SDK_DISABLED"
	envEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	envHeaders        = "OTEL_EXPORTER_OTLP_HEADERS"
	envCapture        = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
)

// Enabled reports whether s and the environment turn export on: an
// endpoint named by OTEL_EXPORTER_OTLP_ENDPOINT, …_TRACES_ENDPOINT or the
// config, and OTEL_SDK_DISABLED not true.
func (s Settings) Enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv(envDisabled)), "true") {
		return false
	}
	return getenv(envEndpoint) != "" || getenv(envTracesEndpoint) != "" || s.Endpoint != ""
}

// protocol is the OTLP protocol in force: the variables, else s.
func (s Settings) protocol(getenv func(string) string) (string, error) {
	p := s.Protocol
	for _, k := range []string{envProtocol, envTracesProtocol} {
		if v := getenv(k); v != "" {
			p = v
		}
	}
	switch p {
	case "", "http/protobuf":
		return "http/protobuf", nil
	case "grpc":
		return "grpc", nil
	}
	return "", fmt.Errorf("telemetry: OTLP protocol %q is not supported: http/protobuf or grpc", p)
}

// Exporter is a started SDK: the tracer and meter every span and metric
// of this process goes through. Shutdown flushes and stops it.
type Exporter struct {
	tp      *sdktrace.TracerProvider
	mp      *sdkmetric.MeterProvider
	tracer  trace.Tracer
	m       instruments
	capture bool
}

// Start starts the SDK with OTLP exporters for traces and metrics,
// configured by s and the standard variables (which win). It sends
// nothing until a span ends.
func Start(ctx context.Context, s Settings, getenv func(string) string) (*Exporter, error) {
	proto, err := s.protocol(getenv)
	if err != nil {
		return nil, err
	}
	// The SDK reads the OTEL_EXPORTER_OTLP_* variables; what is set in
	// code overrides them, so the config's values are passed only where
	// no variable says otherwise.
	endpoint := ""
	if getenv(envEndpoint) == "" && getenv(envTracesEndpoint) == "" {
		endpoint = s.Endpoint
	}
	headers := s.Headers
	if getenv(envHeaders) != "" {
		headers = nil
	}
	var (
		spans   sdktrace.SpanExporter
		metrics sdkmetric.Exporter
	)
	switch proto {
	case "grpc":
		spans, metrics, err = grpcExporters(ctx, endpoint, headers)
	default:
		spans, metrics, err = httpExporters(ctx, endpoint, headers)
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	res, err := newResource(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	e := &Exporter{capture: s.CaptureContent || strings.EqualFold(getenv(envCapture), "true")}
	e.tp = sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(spans), sdktrace.WithResource(res), sdktrace.WithIDGenerator(idGenerator{}))
	e.mp = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics, sdkmetric.WithInterval(30*time.Second))))
	e.tracer = e.tp.Tracer(scope)
	if e.m, err = newInstruments(e.mp.Meter(scope)); err != nil {
		_ = e.Shutdown(ctx)
		return nil, fmt.Errorf("telemetry: metrics: %w", err)
	}
	return e, nil
}

// scope is the instrumentation scope of every span and metric.
const scope = "github.com/arbor-run/arbor/internal/telemetry"

func httpExporters(ctx context.Context, endpoint string, headers map[string]string) (sdktrace.SpanExporter, sdkmetric.Exporter, error) {
	topts := []otlptracehttp.Option{}
	mopts := []otlpmetrichttp.Option{}
	if endpoint != "" {
		if !strings.Contains(endpoint, "://") {
			endpoint = "http://" + endpoint
		}
		// The base URL gets the signal's path, as the variable does.
		base := strings.TrimSuffix(endpoint, "/")
		topts = append(topts, otlptracehttp.WithEndpointURL(base+"/v1/traces"))
		mopts = append(mopts, otlpmetrichttp.WithEndpointURL(base+"/v1/metrics"))
	}
	if len(headers) > 0 {
		topts = append(topts, otlptracehttp.WithHeaders(headers))
		mopts = append(mopts, otlpmetrichttp.WithHeaders(headers))
	}
	spans, err := otlptracehttp.New(ctx, topts...)
	if err != nil {
		return nil, nil, err
	}
	metrics, err := otlpmetrichttp.New(ctx, mopts...)
	if err != nil {
		return nil, nil, errors.Join(err, spans.Shutdown(ctx))
	}
	return spans, metrics, nil
}

func grpcExporters(ctx context.Context, endpoint string, headers map[string]string) (sdktrace.SpanExporter, sdkmetric.Exporter, error) {
	topts := []otlptracegrpc.Option{}
	mopts := []otlpmetricgrpc.Option{}
	if endpoint != "" {
		if !strings.Contains(endpoint, "://") {
			endpoint = "http://" + endpoint // host:port: plain, as a local collector listens
		}
		topts = append(topts, otlptracegrpc.WithEndpointURL(endpoint))
		mopts = append(mopts, otlpmetricgrpc.WithEndpointURL(endpoint))
	}
	if len(headers) > 0 {
		topts = append(topts, otlptracegrpc.WithHeaders(headers))
		mopts = append(mopts, otlpmetricgrpc.WithHeaders(headers))
	}
	spans, err := otlptracegrpc.New(ctx, topts...)
	if err != nil {
		return nil, nil, err
	}
	metrics, err := otlpmetricgrpc.New(ctx, mopts...)
	if err != nil {
		return nil, nil, errors.Join(err, spans.Shutdown(ctx))
	}
	return spans, metrics, nil
}

// newResource is service.name from the config ("arbor" by default),
// overridden by OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
func newResource(ctx context.Context, s Settings) (*resource.Resource, error) {
	name := s.ServiceName
	if name == "" {
		name = "arbor"
	}
	kv := []attribute.KeyValue{semconv.ServiceName(name)}
	if s.Version != "" {
		kv = append(kv, semconv.ServiceVersion(s.Version))
	}
	base := resource.NewSchemaless(kv...)
	env, err := resource.New(ctx, resource.WithFromEnv(), resource.WithHost(), resource.WithProcessPID())
	if err != nil {
		return nil, err
	}
	return resource.Merge(base, env)
}

// Flush exports every span and metric ended so far.
func (e *Exporter) Flush(ctx context.Context) error {
	return errors.Join(e.tp.ForceFlush(ctx), e.mp.ForceFlush(ctx))
}

// Shutdown flushes and stops the SDK. It is safe to call twice.
func (e *Exporter) Shutdown(ctx context.Context) error {
	return errors.Join(e.tp.Shutdown(ctx), e.mp.Shutdown(ctx))
}

// instruments are the metrics: the GenAI conventions' two histograms and
// arbor's counts of runs and nodes by state.
type instruments struct {
	tokens   metric.Int64Histogram
	duration metric.Float64Histogram
	runs     metric.Int64Counter
	nodes    metric.Int64Counter
}

func newInstruments(m metric.Meter) (instruments, error) {
	var in instruments
	var errs [4]error
	in.tokens, errs[0] = m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used"),
		metric.WithExplicitBucketBoundaries(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864))
	in.duration, errs[1] = m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("GenAI operation duration"),
		metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92))
	in.runs, errs[2] = m.Int64Counter("arbor.runs", metric.WithUnit("{run}"),
		metric.WithDescription("Runs ended, by outcome (arbor.run.state)"))
	in.nodes, errs[3] = m.Int64Counter("arbor.nodes", metric.WithUnit("{node}"),
		metric.WithDescription("Node transitions, by the state entered (arbor.node.state)"))
	return in, errors.Join(errs[:]...)
}
