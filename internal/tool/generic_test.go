package tool

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"testing"
)

// decoderGeneric is what typed.decode did before decodeGeneric: a
// Decoder with UseNumber, and nothing after the value.
func decoderGeneric(input []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return v, true
}

var genericSeeds = []string{
	`{}`, `[]`, `{"a":1}`, `{"goal":"part 1","prompt":"Do it."}`,
	`{ "a" : [ 1 , -2.5e+3 , "x" , true , false , null , { } , [ ] ] }`,
	`{"a":1,"a":2}`, `{"s":"tab\tquote\" slash\\ \u00e9 \ud83d\ude00 \ud800"}`,
	`{"k\u0041":"v"}`, "{\"bad\":\"\xff\xfe\"}", "{\"surrogate\":\"\xed\xa0\x80\"}",
	`"just a string"`, `12345678901234567890`, `0.1`, `-0`, `1E-7`, `null`, `true`,
	`{"a":{"b":{"c":[[],[{}]]}}}`, `{"a":1} x`, `{"a":}`, `{"a":1`, `[1,]`, ``, `nul`,
	"{\"line\u2028sep\":\"\u2029\"}", `{"x":"` + "\x01" + `"}`,
}

func FuzzDecodeGeneric(f *testing.F) {
	for _, s := range genericSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		input = bytes.TrimSpace(input)
		got, dup, ok := decodeGeneric(input)
		want, wantOK := decoderGeneric(input)
		if ok && !wantOK {
			t.Fatalf("%q: decodeGeneric accepted what the Decoder refuses", input)
		}
		if ok && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: decodeGeneric = %#v, the Decoder %#v", input, got, want)
		}
		if ok && dup && !bytes.Contains(input, []byte(",")) {
			t.Fatalf("%q: a key twice in an object of one key", input)
		}
		if !ok && wantOK && json.Valid(input) {
			t.Fatalf("%q: decodeGeneric refused valid JSON", input)
		}
	})
}
