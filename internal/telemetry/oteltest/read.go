package oteltest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// Span is an exported span as the collector received it.
type Span struct {
	TraceID, SpanID, ParentSpanID string
	Name                          string
	Kind                          int
	Start, End                    time.Time
	Attrs                         map[string]any // string, int64, float64, bool or []any
	Resource                      map[string]any
	Events                        []Event
	Links                         []Link
	StatusCode                    int // 0 unset, 1 ok, 2 error
}

// Event is a span event.
type Event struct {
	Name  string
	Attrs map[string]any
}

// Link is a span link.
type Link struct {
	TraceID, SpanID string
	Attrs           map[string]any
}

// Point is one data point of a metric: its attributes and the count (a
// histogram's) or value (a sum's) and sum.
type Point struct {
	Metric string
	Attrs  map[string]any
	Count  int64
	Sum    float64
	Value  int64
}

// WaitSpans returns the spans received once cond holds of them, failing
// t with the spans seen after limit (a hang guard, not a timing).
func (c *Collector) WaitSpans(t testing.TB, limit time.Duration, what string, cond func([]Span) bool) []Span {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		spans, _, err := c.read()
		if err != nil {
			t.Fatal(err)
		}
		if cond(spans) {
			return spans
		}
		if time.Now().After(deadline) {
			var b bytes.Buffer
			for _, s := range spans {
				fmt.Fprintf(&b, "  %s %s parent=%s %q\n", s.TraceID, s.SpanID, s.ParentSpanID, s.Name)
			}
			t.Fatalf("gave up waiting for %s after %s; spans received:\n%scollector log:\n%s", what, limit, b.String(), c.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitPoints is WaitSpans for metric data points.
func (c *Collector) WaitPoints(t testing.TB, limit time.Duration, what string, cond func([]Point) bool) []Point {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		_, points, err := c.read()
		if err != nil {
			t.Fatal(err)
		}
		if cond(points) {
			return points
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s after %s; %d points received", what, limit, len(points))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The OTLP JSON shapes read (pdata's JSON marshalers write them).
type (
	otlpLine struct {
		ResourceSpans []struct {
			Resource   otlpResource `json:"resource"`
			ScopeSpans []struct {
				Spans []otlpSpan `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
		ResourceMetrics []struct {
			ScopeMetrics []struct {
				Metrics []otlpMetric `json:"metrics"`
			} `json:"scopeMetrics"`
		} `json:"resourceMetrics"`
	}
	otlpResource struct {
		Attributes []otlpKV `json:"attributes"`
	}
	otlpSpan struct {
		TraceID      string   `json:"traceId"`
		SpanID       string   `json:"spanId"`
		ParentSpanID string   `json:"parentSpanId"`
		Name         string   `json:"name"`
		Kind         int      `json:"kind"`
		Start        string   `json:"startTimeUnixNano"`
		End          string   `json:"endTimeUnixNano"`
		Attributes   []otlpKV `json:"attributes"`
		Events       []struct {
			Name       string   `json:"name"`
			Attributes []otlpKV `json:"attributes"`
		} `json:"events"`
		Links []struct {
			TraceID    string   `json:"traceId"`
			SpanID     string   `json:"spanId"`
			Attributes []otlpKV `json:"attributes"`
		} `json:"links"`
		Status struct {
			Code int `json:"code"`
		} `json:"status"`
	}
	otlpMetric struct {
		Name      string `json:"name"`
		Histogram *struct {
			DataPoints []otlpPoint `json:"dataPoints"`
		} `json:"histogram"`
		Sum *struct {
			DataPoints []otlpPoint `json:"dataPoints"`
		} `json:"sum"`
	}
	otlpPoint struct {
		Attributes []otlpKV `json:"attributes"`
		Count      string   `json:"count"`
		Sum        float64  `json:"sum"`
		AsInt      string   `json:"asInt"`
	}
	otlpKV struct {
		Key   string    `json:"key"`
		Value otlpValue `json:"value"`
	}
	otlpValue struct {
		String *string                       `json:"stringValue"`
		Int    *string                       `json:"intValue"`
		Double *float64                      `json:"doubleValue"`
		Bool   *bool                         `json:"boolValue"`
		Array  *struct{ Values []otlpValue } `json:"arrayValue"`
	}
)

func (v otlpValue) value() any {
	switch {
	case v.String != nil:
		return *v.String
	case v.Int != nil:
		n, _ := strconv.ParseInt(*v.Int, 10, 64)
		return n
	case v.Double != nil:
		return *v.Double
	case v.Bool != nil:
		return *v.Bool
	case v.Array != nil:
		out := make([]any, len(v.Array.Values))
		for i, x := range v.Array.Values {
			out[i] = x.value()
		}
		return out
	}
	return nil
}

func attrs(kvs []otlpKV) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value.value()
	}
	return m
}

func nanos(s string) time.Time {
	n, _ := strconv.ParseInt(s, 10, 64)
	return time.Unix(0, n)
}

// read parses every line the collector has written.
func (c *Collector) read() ([]Span, []Point, error) {
	data, err := os.ReadFile(c.out)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var (
		spans  []Span
		points []Point
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[len(line)-1] != '}' {
			continue // a line still being written
		}
		var l otlpLine
		if err := json.Unmarshal(line, &l); err != nil {
			return nil, nil, fmt.Errorf("collector output: %w", err)
		}
		for _, rs := range l.ResourceSpans {
			res := attrs(rs.Resource.Attributes)
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					sp := Span{TraceID: s.TraceID, SpanID: s.SpanID, ParentSpanID: s.ParentSpanID, Name: s.Name, Kind: s.Kind,
						Start: nanos(s.Start), End: nanos(s.End), Attrs: attrs(s.Attributes), Resource: res, StatusCode: s.Status.Code}
					for _, e := range s.Events {
						sp.Events = append(sp.Events, Event{Name: e.Name, Attrs: attrs(e.Attributes)})
					}
					for _, k := range s.Links {
						sp.Links = append(sp.Links, Link{TraceID: k.TraceID, SpanID: k.SpanID, Attrs: attrs(k.Attributes)})
					}
					spans = append(spans, sp)
				}
			}
		}
		for _, rm := range l.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					var dps []otlpPoint
					switch {
					case m.Histogram != nil:
						dps = m.Histogram.DataPoints
					case m.Sum != nil:
						dps = m.Sum.DataPoints
					}
					for _, p := range dps {
						count, _ := strconv.ParseInt(p.Count, 10, 64)
						value, _ := strconv.ParseInt(p.AsInt, 10, 64)
						points = append(points, Point{Metric: m.Name, Attrs: attrs(p.Attributes), Count: count, Sum: p.Sum, Value: value})
					}
				}
			}
		}
	}
	return spans, points, sc.Err()
}
