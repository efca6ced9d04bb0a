package config

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Telemetry is the telemetry section: where arbor exports its
// OpenTelemetry traces and metrics (internal/telemetry,
// docs/observability.md). The standard OTEL_* variables take precedence
// over it; with neither naming an endpoint nothing is exported.
type Telemetry struct {
	// Endpoint is the collector's base URL ("http://localhost:4318" for
	// OTLP over HTTP, "localhost:4317" or "http://localhost:4317" for
	// gRPC); "" exports nothing unless OTEL_EXPORTER_OTLP_ENDPOINT is set.
	Endpoint string `yaml:"endpoint"`
	// Protocol is http/protobuf (the default) or grpc.
	Protocol string `yaml:"protocol"`
	// Headers are sent with every export (an API key of a hosted
	// backend); never logged.
	Headers map[string]string `yaml:"headers"`
	// ServiceName is service.name ("arbor" by default).
	ServiceName string `yaml:"service_name"`
	// CaptureContent puts prompts, answers and tool arguments and results
	// on the spans (the GenAI conventions' content capture); off by
	// default.
	CaptureContent bool `yaml:"capture_content"`
}

type fileTelemetry struct {
	Endpoint       *string           `yaml:"endpoint"`
	Protocol       *string           `yaml:"protocol"`
	Headers        map[string]string `yaml:"headers"`
	ServiceName    *string           `yaml:"service_name"`
	CaptureContent *bool             `yaml:"capture_content"`
}

// applyTelemetry merges a file's telemetry section. Where the spans go,
// with which headers and with what content is the user's to say: a
// project file's endpoint, headers and capture_content are ignored with a
// warning, so a cloned repository cannot send its prompts elsewhere.
func (c *Config) applyTelemetry(ft fileTelemetry, src string) {
	project := src == c.ProjectConfigFile()
	userOnly := func(key string) {
		c.warnings = append(c.warnings, fmt.Sprintf("%s: telemetry.%s is ignored: only the user file says where traces go; put it in %s", src, key, c.UserConfigFile()))
	}
	switch {
	case ft.Endpoint != nil && project:
		userOnly("endpoint")
	default:
		set(c, &c.Telemetry.Endpoint, ft.Endpoint, "telemetry.endpoint", src)
	}
	switch {
	case ft.CaptureContent != nil && project:
		userOnly("capture_content")
	default:
		set(c, &c.Telemetry.CaptureContent, ft.CaptureContent, "telemetry.capture_content", src)
	}
	if len(ft.Headers) > 0 {
		if project {
			userOnly("headers")
		} else {
			c.Telemetry.Headers = map[string]string{}
			for k, v := range ft.Headers {
				c.Telemetry.Headers[k] = v
			}
			c.sources["telemetry.headers"] = src
		}
	}
	set(c, &c.Telemetry.Protocol, ft.Protocol, "telemetry.protocol", src)
	set(c, &c.Telemetry.ServiceName, ft.ServiceName, "telemetry.service_name", src)
}

// validateTelemetry checks the telemetry section.
func (c *Config) validateTelemetry() error {
	t := c.Telemetry
	switch t.Protocol {
	case "", "http/protobuf", "grpc":
	default:
		return c.invalid("telemetry.protocol", nil, "%q is not an OTLP protocol: http/protobuf or grpc", t.Protocol)
	}
	if e := t.Endpoint; e != "" {
		u, err := url.Parse(e)
		ok := err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
		if !ok { // "localhost:4317", as gRPC takes it
			_, _, err := net.SplitHostPort(e)
			ok = err == nil && !strings.Contains(e, "/")
		}
		if !ok {
			return c.invalid("telemetry.endpoint", nil, "%q is not an http(s) URL or host:port", e)
		}
	}
	for k := range t.Headers {
		if strings.TrimSpace(k) == "" || strings.ContainsAny(k, ":\r\n ") {
			return c.invalid("telemetry.headers", nil, "%q is not a header name", k)
		}
	}
	return nil
}
