package tool

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

type fillTarget struct {
	S       string  `json:"s"`
	B       bool    `json:"b,omitempty"`
	I       int64   `json:"i,omitempty"`
	I8      int8    `json:"i8,omitempty"`
	U       uint16  `json:"u,omitempty"`
	F       float64 `json:"f,omitempty"`
	F32     float32 `json:"f32,omitempty"`
	Untag   string
	List    []string   `json:"list,omitempty"`
	Ref     selfDecode `json:"ref,omitempty"`
	Skip    string     `json:"-"`
	private string
}

// selfDecode decodes itself: fillArgs leaves an input that sets it to
// json.Unmarshal.
type selfDecode int

func (s *selfDecode) UnmarshalJSON(b []byte) error { *s = selfDecode(len(b)); return nil }

// FuzzFillArgs: what fillArgs fills is what json.Unmarshal decodes.
func FuzzFillArgs(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"s":"x","b":true,"i":-3,"i8":127,"u":65535,"f":1e2,"f32":0.1,"Untag":"u"}`,
		`{"i8":128}`, `{"u":-1}`, `{"i":1.5}`, `{"f32":1e39}`, `{"s":1}`, `{"b":"true"}`,
		`{"s":null,"i":null}`, `{"S":"case"}`, `{"untag":"case"}`, `{"list":["a"]}`, `{"ref":"#3"}`,
		`{"Skip":"x"}`, `{"private":"x"}`, `{"s":"a","s":"b"}`, `{"s":"a","S":"b"}`, `{"i":12345678901234567890}`,
		`{"s":"\u00e9\ud800"}`, `[]`, `"s"`, `{"b":"0","b":true}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		input = bytes.TrimSpace(input)
		generic, dup, ok := decodeGeneric(input)
		if !ok || dup { // typed.decode leaves those to json.Unmarshal
			return
		}
		var got fillTarget
		if !fillArgs(generic, reflect.ValueOf(&got).Elem()) {
			return
		}
		var want fillTarget
		if err := json.Unmarshal(input, &want); err != nil {
			t.Fatalf("%q: fillArgs filled what json.Unmarshal refuses: %v", input, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: fillArgs = %+v, json.Unmarshal %+v", input, got, want)
		}
	})
}

// TestFillPlan: the fields fillArgs sets, and the types it leaves alone.
func TestFillPlan(t *testing.T) {
	plan := fillPlanOf(reflect.TypeFor[fillTarget]())
	want := map[string]int{"s": 0, "b": 1, "i": 2, "i8": 3, "u": 4, "f": 5, "f32": 6, "Untag": 7}
	if !reflect.DeepEqual(plan, want) {
		t.Errorf("plan = %v, want %v", plan, want)
	}
	type embedded struct{ fillTarget }
	type asString struct {
		N int `json:"n,string"`
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[embedded](), reflect.TypeFor[asString](), reflect.TypeFor[selfDecode]()} {
		if p := fillPlanOf(typ); p != nil {
			t.Errorf("%s: plan %v, want none", typ, p)
		}
	}
}
