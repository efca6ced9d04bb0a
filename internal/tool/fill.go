package tool

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// fillArgs sets the fields of the struct dst points to from generic, an
// object decodeGeneric made and the schema check passed, as json.Unmarshal
// would set them from the same input, and reports whether it could: only
// when every key names a field of a plain kind (a string, a bool, a
// number) exactly and every value fits it. Otherwise it may have set some
// fields, and the caller decodes the input with json.Unmarshal instead.
// The input was already decoded once for its check; decoding it again,
// with a decoder's reflection and copies, was half of a call's decoding.
func fillArgs(generic any, dst reflect.Value) bool {
	obj, ok := generic.(map[string]any)
	if !ok {
		return false
	}
	plan := fillPlanOf(dst.Type())
	if plan == nil {
		return false
	}
	for k, v := range obj {
		i, ok := plan[k]
		if !ok {
			return false
		}
		if v == nil {
			continue // null leaves the zero value, as in json.Unmarshal
		}
		if !setPlain(dst.Field(i), v) {
			return false
		}
	}
	return true
}

// setPlain sets f from v as json.Unmarshal sets a field of f's kind from
// the JSON value v stands for; false when it would fail, or f's kind is
// not plain.
func setPlain(f reflect.Value, v any) bool {
	switch f.Kind() {
	case reflect.String:
		s, ok := v.(string)
		if ok {
			f.SetString(s)
		}
		return ok
	case reflect.Bool:
		b, ok := v.(bool)
		if ok {
			f.SetBool(b)
		}
		return ok
	}
	num, ok := v.(json.Number)
	if !ok {
		return false
	}
	switch f.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil || f.OverflowInt(n) {
			return false
		}
		f.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, err := strconv.ParseUint(string(num), 10, 64)
		if err != nil || f.OverflowUint(n) {
			return false
		}
		f.SetUint(n)
	case reflect.Float32, reflect.Float64:
		n, err := strconv.ParseFloat(string(num), f.Type().Bits())
		if err != nil || f.OverflowFloat(n) {
			return false
		}
		f.SetFloat(n)
	default:
		return false
	}
	return true
}

// fillPlans caches fillPlanOf by type.
var fillPlans sync.Map // reflect.Type → map[string]int (nil: none)

// fillPlanOf maps the JSON name of each plain field of struct t to its
// index; nil when fillArgs cannot fill t at all: it decodes itself, or it
// has an embedded field, a field named twice or a tag option fillArgs
// does not follow. A field of another kind, or one that decodes itself,
// is left out, so an input that sets it is decoded by json.Unmarshal.
func fillPlanOf(t reflect.Type) map[string]int {
	if p, ok := fillPlans.Load(t); ok {
		return p.(map[string]int)
	}
	plan := makeFillPlan(t)
	fillPlans.Store(t, plan)
	return plan
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func decodesItself(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshaler) || p.Implements(jsonUnmarshaler) ||
		t.Implements(textUnmarshaler) || p.Implements(textUnmarshaler)
}

func makeFillPlan(t reflect.Type) map[string]int {
	if t.Kind() != reflect.Struct || decodesItself(t) {
		return nil
	}
	plan := map[string]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil
		}
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && opts == "" {
			continue
		}
		if strings.Contains(","+opts+",", ",string,") {
			return nil
		}
		if name == "" {
			name = f.Name
		}
		for _, c := range name {
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
				return nil // a name encoding/json might not take as it is
			}
		}
		if _, dup := plan[name]; dup {
			return nil
		}
		plan[name] = -1
		if plainKind(f.Type.Kind()) && !decodesItself(f.Type) {
			plan[name] = i
		}
	}
	for name, i := range plan {
		if i < 0 {
			delete(plan, name)
		}
	}
	return plan
}

func plainKind(k reflect.Kind) bool {
	switch k {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}
