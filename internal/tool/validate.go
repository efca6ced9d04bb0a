package tool

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"
)

// checkSchema validates a value decoded with json.Decoder.UseNumber against
// the subset of JSON Schema the reflector produces for argument structs:
// type, enum, properties, required, additionalProperties:false, items,
// minimum and maximum. It returns one problem per offending field, in a
// stable order, each naming the field by its path ("todos[1].status").
func checkSchema(s *jsonschema.Schema, v any, path string) []string {
	if s == nil || s == jsonschema.TrueSchema {
		return nil
	}
	if s.Type != "" && !hasJSONType(v, s.Type) {
		if path == "" {
			return []string{fmt.Sprintf("arguments must be a JSON %s, not %s", s.Type, jsonTypeName(v))}
		}
		return []string{fmt.Sprintf("field %q must be %s, not %s", path, article(s.Type), describeValue(v))}
	}
	var problems []string
	if len(s.Enum) > 0 && !inEnum(s.Enum, v) {
		problems = append(problems, fmt.Sprintf("field %q must be one of %s, not %s", path, enumList(s.Enum), describeValue(v)))
	}
	if n, ok := v.(json.Number); ok {
		problems = append(problems, checkBounds(s, n, path)...)
	}
	switch v := v.(type) {
	case map[string]any:
		problems = append(problems, checkObject(s, v, path)...)
	case []any:
		for i, item := range v {
			problems = append(problems, checkSchema(s.Items, item, fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return problems
}

func checkObject(s *jsonschema.Schema, obj map[string]any, path string) []string {
	var problems []string
	for _, name := range s.Required {
		if _, ok := obj[name]; !ok {
			problems = append(problems, fmt.Sprintf("missing required field %q", joinPath(path, name)))
		}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		var prop *jsonschema.Schema
		if s.Properties != nil {
			prop, _ = s.Properties.Get(k)
		}
		if prop == nil {
			if s.AdditionalProperties == jsonschema.FalseSchema {
				problems = append(problems, fmt.Sprintf("unknown field %q (known fields: %s)", joinPath(path, k), knownFields(s)))
			}
			continue
		}
		// null stands for "absent" in optional fields: encoding/json leaves
		// the zero value, which is what omitting the field means.
		if obj[k] == nil && !slices.Contains(s.Required, k) {
			continue
		}
		problems = append(problems, checkSchema(prop, obj[k], joinPath(path, k))...)
	}
	return problems
}

func checkBounds(s *jsonschema.Schema, n json.Number, path string) []string {
	var problems []string
	if s.Minimum != "" && compareNumbers(n, s.Minimum) < 0 {
		problems = append(problems, fmt.Sprintf("field %q must be >= %s, not %s", path, s.Minimum, n))
	}
	if s.Maximum != "" && compareNumbers(n, s.Maximum) > 0 {
		problems = append(problems, fmt.Sprintf("field %q must be <= %s, not %s", path, s.Maximum, n))
	}
	return problems
}

// compareNumbers compares two JSON numbers exactly; unparsable numbers
// compare equal so they never produce a spurious complaint.
func compareNumbers(a, b json.Number) int {
	x, okA := new(big.Rat).SetString(a.String())
	y, okB := new(big.Rat).SetString(b.String())
	if !okA || !okB {
		return 0
	}
	return x.Cmp(y)
}

func hasJSONType(v any, typ string) bool {
	switch typ {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		_, err := n.Int64()
		return err == nil
	}
	return true
}

func jsonTypeName(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		if _, err := v.Int64(); err == nil {
			return "an integer"
		}
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// describeValue names v's type and, for short scalars, its value.
func describeValue(v any) string {
	switch v := v.(type) {
	case string:
		if len(v) <= 40 {
			return fmt.Sprintf("the string %q", v)
		}
	case json.Number:
		return v.String()
	case bool:
		return fmt.Sprint(v)
	}
	return jsonTypeName(v)
}

func article(typ string) string {
	switch typ {
	case "object", "array", "integer":
		return "an " + typ
	}
	return "a " + typ
}

func inEnum(enum []any, v any) bool {
	for _, e := range enum {
		if fmt.Sprint(e) == fmt.Sprint(v) {
			return true
		}
	}
	return false
}

func enumList(enum []any) string {
	parts := make([]string, len(enum))
	for i, e := range enum {
		parts[i] = fmt.Sprintf("%q", fmt.Sprint(e))
	}
	return strings.Join(parts, ", ")
}

func knownFields(s *jsonschema.Schema) string {
	if s.Properties == nil || s.Properties.Len() == 0 {
		return "none"
	}
	var names []string
	for pair := s.Properties.Oldest(); pair != nil; pair = pair.Next() {
		names = append(names, pair.Key)
	}
	return strings.Join(names, ", ")
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
