package llm

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestCount(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want Count
		bad  bool
	}{
		{in: `12`, want: 12},
		{in: `-3`, want: -3},
		{in: `12.0`, want: 12},
		{in: `1.9`, want: 1},
		{in: `1e3`, want: 1000},
		{in: `"7"`, want: 7},
		{in: `"7.5"`, want: 7},
		{in: `null`, want: 99}, // unchanged
		{in: `"null"`, want: 99},
		{in: `"seven"`, bad: true},
		{in: `true`, bad: true},
		{in: `[1]`, bad: true},
		{in: `{}`, bad: true},
	} {
		var v struct {
			N Count `json:"n"`
		}
		v.N = 99
		err := json.Unmarshal([]byte(`{"n":`+c.in+`}`), &v)
		switch {
		case c.bad:
			var typeErr *json.UnmarshalTypeError
			if !errors.As(err, &typeErr) {
				t.Errorf("%s: read %d, err %v; want a *json.UnmarshalTypeError", c.in, v.N, err)
			}
		case !c.bad && err != nil:
			t.Errorf("%s: %v", c.in, err)
		case !c.bad && v.N != c.want:
			t.Errorf("%s: read %d, want %d", c.in, v.N, c.want)
		}
	}
}
