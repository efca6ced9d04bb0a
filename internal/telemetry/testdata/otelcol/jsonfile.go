package main

import (
	"context"
	"errors"
	"os"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The jsonfile exporter appends every batch it receives to a file as one
// line of OTLP JSON (pdata's own marshalers), traces and metrics alike:
// what the contrib file exporter writes, in a few lines, since its
// release matching this collector is not served.

type jsonfileConfig struct {
	Path string `mapstructure:"path"`
}

func newJSONFileFactory() exporter.Factory {
	return exporter.NewFactory(component.MustNewType("jsonfile"),
		func() component.Config { return &jsonfileConfig{} },
		exporter.WithTraces(func(_ context.Context, _ exporter.Settings, cfg component.Config) (exporter.Traces, error) {
			return open(cfg)
		}, component.StabilityLevelDevelopment),
		exporter.WithMetrics(func(_ context.Context, _ exporter.Settings, cfg component.Config) (exporter.Metrics, error) {
			return open(cfg)
		}, component.StabilityLevelDevelopment))
}

// files shares one writer per path between the traces and metrics
// pipelines, so their lines never interleave.
var (
	filesMu sync.Mutex
	files   = map[string]*jsonfile{}
)

func open(cfg component.Config) (*jsonfile, error) {
	path := cfg.(*jsonfileConfig).Path
	if path == "" {
		return nil, errors.New("jsonfile: path is required")
	}
	filesMu.Lock()
	defer filesMu.Unlock()
	if f := files[path]; f != nil {
		return f, nil
	}
	f := &jsonfile{path: path}
	files[path] = f
	return f, nil
}

type jsonfile struct {
	path string
	mu   sync.Mutex // guards f and the writes
	f    *os.File
}

func (j *jsonfile) Start(context.Context, component.Host) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f != nil {
		return nil
	}
	f, err := os.OpenFile(j.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	j.f = f
	return err
}

func (j *jsonfile) Shutdown(context.Context) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

func (j *jsonfile) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (j *jsonfile) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		return err
	}
	return j.write(b)
}

func (j *jsonfile) ConsumeMetrics(_ context.Context, md pmetric.Metrics) error {
	b, err := (&pmetric.JSONMarshaler{}).MarshalMetrics(md)
	if err != nil {
		return err
	}
	return j.write(b)
}

func (j *jsonfile) write(b []byte) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return errors.New("jsonfile: not started")
	}
	_, err := j.f.Write(append(b, '\n'))
	return err
}
