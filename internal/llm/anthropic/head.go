package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/arbor-run/arbor/internal/llm"
)

// headKey is what the start of a body is encoded from, besides its tools.
type headKey struct {
	model, system     string
	maxTokens, budget int64
}

// headCache keeps the start of the last body encoded (model, cap, system
// prompt and tools).
type headCache = llm.HeadCache[headKey]

// headStart returns the start of req's body, from heads when it kept it.
func headStart(heads *headCache, req *llm.Request, defaultMax int64) ([]byte, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = defaultMax
	}
	key := headKey{model: req.Model, system: req.System, maxTokens: maxTokens, budget: req.ThinkingBudget}
	return heads.Get(key, req.Tools, func() ([]byte, error) {
		b, err := headOf(req, maxTokens, defaultMax)
		if err != nil {
			return nil, err
		}
		return b.encode()
	})
}

// headOf is the body of req without its messages.
func headOf(req *llm.Request, maxTokens, defaultMax int64) (body, error) {
	b := body{Stream: true, Model: req.Model, MaxTokens: maxTokens}
	if req.ThinkingBudget > 0 {
		// The API requires the budget to be below max_tokens and counts
		// thinking against it, so the cap leaves room for the answer.
		if b.MaxTokens <= req.ThinkingBudget {
			b.MaxTokens = req.ThinkingBudget + defaultMax
		}
		b.Thinking = &thinkingConfig{Type: "enabled", BudgetTokens: req.ThinkingBudget}
	}
	if req.System != "" {
		b.System = []textBlock{{Type: "text", Text: req.System}}
	}
	b.Tools = make([]toolDef, 0, len(req.Tools))
	for _, spec := range req.Tools {
		t, err := toolFor(spec)
		if err != nil {
			return body{}, err
		}
		b.Tools = append(b.Tools, t)
	}
	// The stable prefix gets a breakpoint: the system prompt's end, or
	// the tools' when there is no system prompt.
	switch {
	case len(b.System) > 0:
		b.System[len(b.System)-1].CacheControl = ephemeral
	case len(b.Tools) > 0:
		b.Tools[len(b.Tools)-1].CacheControl = ephemeral
	}
	return b, nil
}

// encode writes the body b as JSON without its closing brace, so that its
// messages can follow: the bytes encoding/json writes for b with HTML
// left unescaped (TestHeadIsTheBodyEncodedAtOnce), written by hand into
// one buffer made for them. Through encoding/json the head (the tools'
// schemas and the system prompt, about 20 KB) grew that package's buffer
// to its whole size on a session's first call, leaving about 65 KB of
// copies behind, resident until the process first collects.
func (b body) encode() ([]byte, error) {
	buf := make([]byte, 0, b.room())
	buf = append(buf, `{"stream":`...)
	buf = strconv.AppendBool(buf, b.Stream)
	buf = append(buf, `,"max_tokens":`...)
	buf = strconv.AppendInt(buf, b.MaxTokens, 10)
	buf = append(buf, `,"model":`...)
	buf = appendString(buf, b.Model)
	if len(b.System) > 0 {
		buf = append(buf, `,"system":[`...)
		for i, t := range b.System {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, `{"type":`...)
			buf = appendString(buf, t.Type)
			buf = append(buf, `,"text":`...)
			buf = appendString(buf, t.Text)
			buf = appendCache(buf, t.CacheControl)
			buf = append(buf, '}')
		}
		buf = append(buf, ']')
	}
	if t := b.Thinking; t != nil {
		buf = append(buf, `,"thinking":{"type":`...)
		buf = appendString(buf, t.Type)
		buf = append(buf, `,"budget_tokens":`...)
		buf = strconv.AppendInt(buf, t.BudgetTokens, 10)
		buf = append(buf, '}')
	}
	if len(b.Tools) > 0 {
		buf = append(buf, `,"tools":[`...)
		for i, t := range b.Tools {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, `{"name":`...)
			buf = appendString(buf, t.Name)
			if t.Description != "" {
				buf = append(buf, `,"description":`...)
				buf = appendString(buf, t.Description)
			}
			buf = append(buf, `,"input_schema":`...)
			if bytes.ContainsAny(t.InputSchema, " \t\r\n") {
				w := bytes.NewBuffer(buf)
				if err := json.Compact(w, t.InputSchema); err != nil {
					return nil, fmt.Errorf("tool %q: input schema: %w", t.Name, err)
				}
				buf = w.Bytes()
			} else { // compact already (toolFor checked that it is JSON)
				buf = append(buf, t.InputSchema...)
			}
			buf = appendCache(buf, t.CacheControl)
			buf = append(buf, '}')
		}
		buf = append(buf, ']')
	}
	return buf, nil
}

// appendCache appends a block's cache_control field, if it has one.
func appendCache(buf []byte, c *cacheControl) []byte {
	if c == nil {
		return buf
	}
	buf = append(buf, `,"cache_control":{"type":`...)
	buf = appendString(buf, c.Type)
	return append(buf, '}')
}

// appendString appends s as a JSON string, as encoding/json writes it
// with HTML left unescaped (FuzzAppendString): quotes and backslashes
// escaped, control characters as \b, \f, \n, \r, \t or \u00XX, invalid
// UTF-8 as \ufffd, and U+2028 and U+2029 (line and paragraph separators,
// which JavaScript reads as line ends) as \u2028 and \u2029.
func appendString(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	plain := 0 // s[plain:i] is still to append as it is
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				buf = append(append(buf, s[plain:i]...), `\ufffd`...)
			case r == '\u2028' || r == '\u2029':
				buf = append(append(buf, s[plain:i]...), '\\', 'u', '2', '0', '2', hex[r&0xf])
			default:
				i += size
				continue
			}
			i += size
			plain = i
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		buf = append(buf, s[plain:i]...)
		switch c {
		case '"', '\\':
			buf = append(buf, '\\', c)
		case '\b':
			buf = append(buf, '\\', 'b')
		case '\f':
			buf = append(buf, '\\', 'f')
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\r':
			buf = append(buf, '\\', 'r')
		case '\t':
			buf = append(buf, '\\', 't')
		default:
			buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		plain = i
	}
	return append(append(buf, s[plain:]...), '"')
}

// room is the buffer to make for b's encoding: its text and the JSON
// around it, with an eighth more for what escaping adds.
func (b body) room() int {
	n := 256 + len(b.Model)
	for _, t := range b.System {
		n += len(t.Text)
	}
	for _, t := range b.Tools {
		n += 64 + len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	return n + n/8
}
