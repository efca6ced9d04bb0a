package llm

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
)

// Count is a whole number in a provider's streamed JSON (an index, a token
// count), read as the official SDKs read it: from an integer, from a float
// (truncated) or from a string holding either, as some compatible servers
// send them. null leaves it unchanged; anything else is a
// *json.UnmarshalTypeError, so that callers tell it from a broken stream.
type Count int64

// UnmarshalJSON implements json.Unmarshaler.
func (c *Count) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		b = []byte(s)
	}
	if string(b) == "null" {
		return nil
	}
	if n, err := strconv.ParseInt(string(b), 10, 64); err == nil {
		*c = Count(n)
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return &json.UnmarshalTypeError{Value: fmt.Sprintf("%.40s", b), Type: reflect.TypeFor[Count]()}
	}
	*c = Count(f)
	return nil
}
