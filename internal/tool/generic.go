package tool

import (
	"encoding/json"
	"unicode/utf8"
)

// decodeGeneric decodes input, one JSON value with no space around it,
// into what a json.Decoder with UseNumber decodes it into: map[string]any,
// []any, string, bool, json.Number or nil. ok is false when input is not
// valid JSON; then the caller asks the Decoder, for its error. Every tool
// call's input is decoded so for its schema check (typed.decode), and the
// Decoder, its buffer and its scanner were most of that check's cost.
//
// dup says that an object in input has a key twice: the value kept is
// the last, as the Decoder keeps, but json.Unmarshal into a struct
// decodes the others too, and fails when one does not fit its field.
func decodeGeneric(input []byte) (v any, dup, ok bool) {
	if !json.Valid(input) {
		return nil, false, false
	}
	p := validParser{data: input}
	v = p.value()
	return v, p.dup, !p.failed
}

// validParser reads JSON that json.Valid accepted, so it never checks
// its syntax; what encoding/json would make of a string with escapes or
// of invalid UTF-8 it leaves to encoding/json.
type validParser struct {
	data   []byte
	i      int
	failed bool
	dup    bool // an object has a key twice
}

func (p *validParser) space() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *validParser) value() any {
	p.space()
	switch c := p.data[p.i]; c {
	case '{':
		p.i++
		m := map[string]any{}
		p.space()
		if p.data[p.i] == '}' {
			p.i++
			return m
		}
		for {
			p.space()
			k := p.string()
			p.space()
			p.i++ // ':'
			if _, ok := m[k]; ok {
				p.dup = true
			}
			m[k] = p.value() // a repeated key: the last one, as encoding/json
			p.space()
			c := p.data[p.i]
			p.i++ // ',' or '}'
			if c == '}' {
				return m
			}
		}
	case '[':
		p.i++
		a := []any{}
		p.space()
		if p.data[p.i] == ']' {
			p.i++
			return a
		}
		for {
			a = append(a, p.value())
			p.space()
			c := p.data[p.i]
			p.i++ // ',' or ']'
			if c == ']' {
				return a
			}
		}
	case '"':
		return p.string()
	case 't':
		p.i += len("true")
		return true
	case 'f':
		p.i += len("false")
		return false
	case 'n':
		p.i += len("null")
		return nil
	default: // a number
		start := p.i
		for p.i < len(p.data) && isNumberByte(p.data[p.i]) {
			p.i++
		}
		return json.Number(p.data[start:p.i])
	}
}

func isNumberByte(c byte) bool {
	return '0' <= c && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// string reads the string literal at p.i. One without escapes whose bytes
// are valid UTF-8 is its bytes; any other is unquoted by encoding/json,
// which replaces invalid UTF-8 and resolves escapes its own way.
func (p *validParser) string() string {
	start := p.i
	p.i++
	plain := true
	for {
		c := p.data[p.i]
		if c == '"' {
			break
		}
		if c == '\\' {
			plain = false
			p.i++ // the escaped byte cannot end the literal
		}
		p.i++
	}
	p.i++
	lit := p.data[start:p.i]
	body := lit[1 : len(lit)-1]
	if plain && utf8.Valid(body) {
		return string(body)
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		p.failed = true // not for valid JSON; the caller asks the Decoder
	}
	return s
}
