package llmtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Turn is the scripted answer to one model request.
type Turn struct {
	Text      string     `json:"text,omitempty" yaml:"text,omitempty"`
	Thinking  string     `json:"thinking,omitempty" yaml:"thinking,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty" yaml:"tool_calls,omitempty"`
	// StopReason defaults to "tool_use" when there are tool calls and
	// "end_turn" otherwise; "max_tokens", "stop_sequence" and "refusal" are
	// also allowed.
	StopReason string `json:"stop_reason,omitempty" yaml:"stop_reason,omitempty"`
	// Usage defaults to estimates derived from the request and answer sizes
	// (Input and Output are never zero on the wire).
	Usage Usage  `json:"usage,omitempty" yaml:"usage,omitempty"`
	Fault *Fault `json:"fault,omitempty" yaml:"fault,omitempty"`
	// Expect, when set, makes the server answer 400 with a clear message
	// unless the request's last user message text (or tool result content)
	// contains this string. Helps scripts fail loudly.
	Expect string `json:"expect,omitempty" yaml:"expect,omitempty"`
}

// ToolCall is one scripted tool call. Input is any JSON object value (a map
// in YAML, or a string holding a JSON object); an empty ID is generated
// ("toolu_…" for Anthropic, "call_…" for OpenAI).
type ToolCall struct {
	ID    string `json:"id,omitempty" yaml:"id,omitempty"`
	Name  string `json:"name" yaml:"name"`
	Input any    `json:"input,omitempty" yaml:"input,omitempty"`
	// RawInput, when set, is sent as the call's arguments as it is, even
	// when it is not valid JSON: a model's malformed arguments. The OpenAI
	// wire format carries it (its arguments are a string), and so does an
	// Anthropic stream (as input_json_delta fragments); a non-streaming
	// Anthropic message cannot, and that request is answered 500.
	RawInput string `json:"raw_input,omitempty" yaml:"raw_input,omitempty"`
}

// Usage is the token counts reported for a turn.
type Usage struct {
	Input      int64 `json:"input,omitempty" yaml:"input,omitempty"`
	Output     int64 `json:"output,omitempty" yaml:"output,omitempty"`
	CacheRead  int64 `json:"cache_read,omitempty" yaml:"cache_read,omitempty"`
	CacheWrite int64 `json:"cache_write,omitempty" yaml:"cache_write,omitempty"`
}

// FaultKind names a way the server misbehaves.
type FaultKind string

const (
	// FaultRateLimit answers 429 (or Status) with a Retry-After header
	// (seconds, from RetryAfter; default 1) and a JSON error body.
	FaultRateLimit FaultKind = "rate_limit"
	// FaultServer answers 500 (or Status) with a JSON error body.
	FaultServer FaultKind = "server_error"
	// FaultCut starts streaming, sends AfterEvents SSE events, then closes
	// the TCP connection abruptly.
	FaultCut FaultKind = "cut"
	// FaultMalformed starts streaming, sends AfterEvents events, then sends
	// an SSE data line that is not JSON and ends the response.
	FaultMalformed FaultKind = "malformed"
	// FaultStall starts streaming (headers + AfterEvents events), then sends
	// nothing until the request context ends, the server closes, or Stall
	// elapses (default: forever); after Stall the stream resumes normally.
	FaultStall FaultKind = "stall"
	// FaultSlow streams normally but waits Delay between events; the turn
	// still completes.
	FaultSlow FaultKind = "slow"
)

// Fault makes a turn misbehave. For the stream faults (cut, malformed,
// stall) an AfterEvents at or past the end of the stream fires the fault
// before the stream's final event, so the stream never completes.
type Fault struct {
	Kind        FaultKind `json:"kind" yaml:"kind"`
	Status      int       `json:"status,omitempty" yaml:"status,omitempty"`
	RetryAfter  int       `json:"retry_after,omitempty" yaml:"retry_after,omitempty"` // seconds
	AfterEvents int       `json:"after_events,omitempty" yaml:"after_events,omitempty"`
	Delay       Duration  `json:"delay,omitempty" yaml:"delay,omitempty"`
	Stall       Duration  `json:"stall,omitempty" yaml:"stall,omitempty"`
}

// Duration is a time.Duration written as "150ms" in JSON and YAML.
type Duration time.Duration

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string such as "150ms" or "2s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"150ms\", got %s", b)
	}
	return d.parse(s)
}

// MarshalYAML writes d as a duration string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalYAML reads a duration string such as "150ms" or "2s".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: duration must be a string like \"150ms\"", n.Line)
	}
	if err := d.parse(n.Value); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	return nil
}

func (d *Duration) parse(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration must be a string like \"150ms\": %w", err)
	}
	if v < 0 {
		return fmt.Errorf("duration %q is negative", s)
	}
	*d = Duration(v)
	return nil
}

// Script is a sequence of turns, usually loaded from a file.
type Script struct {
	Turns []Turn `json:"turns" yaml:"turns"`
}

// ErrScript is what every script validation error unwraps to.
var ErrScript = errors.New("invalid script")

// ScriptError says what is wrong with a script and where.
type ScriptError struct {
	// File is the script's path, empty for scripts built in code.
	File string
	// Turn is the 1-based turn number, 0 when the error is not about one turn.
	Turn int
	Msg  string
}

func (e *ScriptError) Error() string {
	var b strings.Builder
	b.WriteString("llmtest: script")
	if e.File != "" {
		b.WriteString(" " + e.File)
	}
	if e.Turn > 0 {
		fmt.Fprintf(&b, ": turn %d", e.Turn)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

func (e *ScriptError) Unwrap() error { return ErrScript }

// LoadScript reads a .yaml, .yml or .json script and validates it. Unknown
// fields are errors, so typos fail loudly.
func LoadScript(path string) (Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Script{}, fmt.Errorf("llmtest: reading script: %w", err)
	}
	var s Script
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".yaml", ".yml":
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		err = dec.Decode(&s)
	case ".json":
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		err = dec.Decode(&s)
	default:
		return Script{}, &ScriptError{File: path, Msg: fmt.Sprintf("unsupported extension %q (want .yaml, .yml or .json)", ext)}
	}
	if err != nil {
		return Script{}, &ScriptError{File: path, Msg: "cannot parse: " + err.Error()}
	}
	if err := s.Validate(); err != nil {
		var se *ScriptError
		if errors.As(err, &se) {
			se.File = path
		}
		return Script{}, err
	}
	return s, nil
}

// Validate reports the first problem in the script as a *ScriptError.
func (s Script) Validate() error {
	if len(s.Turns) == 0 {
		return &ScriptError{Msg: "no turns (want a top-level \"turns\" list)"}
	}
	for i, t := range s.Turns {
		if err := t.Validate(); err != nil {
			var se *ScriptError
			if errors.As(err, &se) {
				se.Turn = i + 1
			}
			return err
		}
	}
	return nil
}

// Validate reports what is wrong with the turn as a *ScriptError.
func (t Turn) Validate() error {
	bad := func(format string, args ...any) error {
		return &ScriptError{Msg: fmt.Sprintf(format, args...)}
	}
	switch t.StopReason {
	case "", "end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal":
	default:
		return bad("unknown stop_reason %q (want end_turn, tool_use, max_tokens, stop_sequence or refusal)", t.StopReason)
	}
	for i, c := range t.ToolCalls {
		if strings.TrimSpace(c.Name) == "" {
			return bad("tool call %d has no name", i+1)
		}
		if _, err := inputJSON(c.Input); err != nil {
			return bad("tool call %d (%s): %v", i+1, c.Name, err)
		}
	}
	if u := t.Usage; u.Input < 0 || u.Output < 0 || u.CacheRead < 0 || u.CacheWrite < 0 {
		return bad("usage counts must not be negative")
	}
	if t.Fault != nil {
		return t.Fault.validate(bad)
	}
	return nil
}

func (f *Fault) validate(bad func(string, ...any) error) error {
	switch f.Kind {
	case FaultRateLimit, FaultServer, FaultCut, FaultMalformed, FaultStall, FaultSlow:
	case "":
		return bad("fault has no kind")
	default:
		return bad("unknown fault kind %q (want rate_limit, server_error, cut, malformed, stall or slow)", f.Kind)
	}
	if f.Status != 0 && (f.Status < 400 || f.Status > 599) {
		return bad("fault status %d is not an HTTP error status (400-599)", f.Status)
	}
	if f.RetryAfter < 0 || f.AfterEvents < 0 {
		return bad("fault retry_after and after_events must not be negative")
	}
	return nil
}

// inputJSON returns a tool call input as a JSON object. nil becomes {}; a
// string holding a JSON object is used verbatim.
func inputJSON(in any) (json.RawMessage, error) {
	var raw []byte
	switch v := in.(type) {
	case nil:
		return json.RawMessage(`{}`), nil
	case string:
		raw = []byte(v)
	case json.RawMessage:
		raw = v
	case []byte:
		raw = v
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("input is not JSON-encodable: %w", err)
		}
		raw = b
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("input must be a JSON object, got %.60s", raw)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	return buf.Bytes(), nil
}
