package tool

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/invopop/jsonschema"

	"github.com/arbor-run/arbor/internal/permission"
)

type sampleItem struct {
	Name  string `json:"name"`
	Level string `json:"level" jsonschema:"enum=low,enum=high"`
}

type sampleArgs struct {
	Path   string       `json:"path" jsonschema:"description=Where to look"`
	Count  int          `json:"count,omitempty" jsonschema:"minimum=1,maximum=10" jsonschema_description:"How many, between 1 and 10."`
	Items  []sampleItem `json:"items,omitempty"`
	Strict bool         `json:"strict,omitempty"`
}

func (a sampleArgs) Target() Target { return Target{Paths: []string{a.Path}} }

type pointerTargetArgs struct {
	Command string `json:"command"`
}

func (a *pointerTargetArgs) Target() Target { return Target{Command: a.Command} }

type noArgs struct{}

// openItem describes itself as an object that takes any property, so
// the schema check lets fields through that the struct does not have.
type openItem struct {
	Name string `json:"name"`
}

func (openItem) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object"}
}

type openArgs struct {
	Item openItem `json:"item"`
}

// echoTool returns its decoded arguments as JSON.
func echoTool[A any](name string) Tool {
	return New(name, "echoes its arguments", KindRead, func(_ context.Context, _ Call, a A) Result {
		raw, err := json.Marshal(a)
		if err != nil {
			return Errorf("%v", err)
		}
		return Result{Content: string(raw)}
	})
}

func TestNew(t *testing.T) {
	t.Parallel()

	t.Run("DerivesSchemaFromArgs", func(t *testing.T) {
		t.Parallel()
		info := echoTool[sampleArgs]("sample").Info()
		reqEqual(t, info.Name, "sample")
		reqEqual(t, info.Kind, KindRead)

		type prop struct {
			Type        string   `json:"type"`
			Description string   `json:"description"`
			Enum        []string `json:"enum"`
			Minimum     *int     `json:"minimum"`
			Maximum     *int     `json:"maximum"`
			Items       *struct {
				Properties map[string]prop `json:"properties"`
				Required   []string        `json:"required"`
			} `json:"items"`
		}
		var s struct {
			Schema               *string         `json:"$schema"`
			ID                   *string         `json:"$id"`
			Type                 string          `json:"type"`
			Properties           map[string]prop `json:"properties"`
			Required             []string        `json:"required"`
			AdditionalProperties *bool           `json:"additionalProperties"`
		}
		if err := json.Unmarshal(info.Schema, &s); err != nil {
			t.Fatal(err)
		}
		if s.Schema != nil || s.ID != nil {
			t.Fatalf("schema carries $schema or $id: %s", info.Schema)
		}
		reqEqual(t, s.Type, "object")
		if s.AdditionalProperties == nil || *s.AdditionalProperties {
			t.Fatalf("additionalProperties is not false: %s", info.Schema)
		}
		reqEqual(t, slices.Equal(s.Required, []string{"path"}), true)
		reqEqual(t, s.Properties["path"].Type, "string")
		reqEqual(t, s.Properties["path"].Description, "Where to look")
		reqEqual(t, s.Properties["count"].Type, "integer")
		reqEqual(t, s.Properties["count"].Description, "How many, between 1 and 10.")
		reqEqual(t, *s.Properties["count"].Minimum, 1)
		reqEqual(t, s.Properties["strict"].Type, "boolean")
		items := s.Properties["items"].Items
		reqEqual(t, slices.Equal(items.Required, []string{"name", "level"}), true)
		reqEqual(t, slices.Equal(items.Properties["level"].Enum, []string{"low", "high"}), true)
	})

	t.Run("EmptyStructHasEmptyProperties", func(t *testing.T) {
		t.Parallel()
		reqEqual(t, string(echoTool[noArgs]("none").Info().Schema), `{"properties":{},"additionalProperties":false,"type":"object"}`)
	})

	t.Run("DecodesValidInput", func(t *testing.T) {
		t.Parallel()
		tl := echoTool[sampleArgs]("sample")
		res := tl.Run(context.Background(), Call{ID: "1", Input: json.RawMessage(`{"path":"a","count":3,"items":[{"name":"x","level":"low"}],"strict":null}`)})
		reqEqual(t, reqOK(t, res), `{"path":"a","count":3,"items":[{"name":"x","level":"low"}]}`)
	})

	t.Run("EmptyAndNullInputMeanEmptyObject", func(t *testing.T) {
		t.Parallel()
		tl := echoTool[noArgs]("none")
		for _, in := range []string{"", "null", "  ", "{}"} {
			reqEqual(t, reqOK(t, tl.Run(context.Background(), Call{Input: json.RawMessage(in)})), "{}")
		}
		// And a required field is then reported missing.
		msg := reqErr(t, echoTool[sampleArgs]("sample").Run(context.Background(), Call{}))
		reqEqual(t, msg, `invalid arguments for sample: missing required field "path"`)
	})

	t.Run("InvalidInputNamesToolAndField", func(t *testing.T) {
		t.Parallel()
		tl := echoTool[sampleArgs]("sample")
		cases := []struct{ name, input, want string }{
			{"MissingRequired", `{"count":2}`, `invalid arguments for sample: missing required field "path"`},
			{"Unknown", `{"path":"a","colour":"red"}`, `unknown field "colour" (known fields: path, count, items, strict)`},
			{"WrongType", `{"path":"a","count":"three"}`, `field "count" must be an integer, not the string "three"`},
			{"Fraction", `{"path":"a","count":2.5}`, `field "count" must be an integer, not 2.5`},
			{"NullRequired", `{"path":null}`, `field "path" must be a string, not null`},
			{"BelowMinimum", `{"path":"a","count":0}`, `field "count" must be >= 1, not 0`},
			{"AboveMaximum", `{"path":"a","count":11}`, `field "count" must be <= 10, not 11`},
			{"NestedMissing", `{"path":"a","items":[{"name":"x","level":"low"},{"level":"high"}]}`, `missing required field "items[1].name"`},
			{"NestedEnum", `{"path":"a","items":[{"name":"x","level":"mid"}]}`, `field "items[0].level" must be one of "low", "high", not the string "mid"`},
			{"NestedUnknown", `{"path":"a","items":[{"name":"x","level":"low","extra":1}]}`, `unknown field "items[0].extra"`},
			{"NotAnObject", `["a"]`, `invalid arguments for sample: arguments must be a JSON object, not an array`},
			{"NotJSON", `{"path":`, `invalid arguments for sample: input is not valid JSON`},
			{"TrailingData", `{"path":"a"} {"path":"b"}`, `unexpected data after the JSON object`},
			{"Overflow", `{"path":"a","count":1e400}`, `field "count"`},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				reqContains(t, reqErr(t, tl.Run(context.Background(), Call{Input: json.RawMessage(tc.input)})), tc.want)
			})
		}
	})

	t.Run("UnknownFieldOfAnOpenSchema", func(t *testing.T) {
		t.Parallel()
		// The check passes it; the struct's decoding must still refuse it.
		reqContains(t, reqErr(t, echoTool[openArgs]("open").Run(context.Background(), Call{Input: json.RawMessage(`{"item":{"name":"a","extra":1}}`)})),
			`invalid arguments for open`, `unknown field "extra"`)
		if closedObjects(schemaOf(reflect.TypeFor[openArgs]()).schema) {
			t.Error("openArgs' schema is reported closed")
		}
		if !closedObjects(schemaOf(reflect.TypeFor[sampleArgs]()).schema) {
			t.Error("sampleArgs' schema is reported open")
		}
	})

	t.Run("ReportsEveryProblemAtOnce", func(t *testing.T) {
		t.Parallel()
		msg := reqErr(t, echoTool[sampleArgs]("sample").Run(context.Background(), Call{Input: json.RawMessage(`{"count":"x","zzz":1}`)}))
		reqContains(t, msg, `missing required field "path"`, `field "count" must be an integer`, `unknown field "zzz"`)
	})

	t.Run("Target", func(t *testing.T) {
		t.Parallel()
		got, err := echoTool[sampleArgs]("sample").Target(json.RawMessage(`{"path":"dir/f.go"}`))
		if err != nil {
			t.Fatal(err)
		}
		reqEqual(t, got.Main(), "dir/f.go")

		got, err = echoTool[pointerTargetArgs]("ptr").Target(json.RawMessage(`{"command":"make test"}`))
		if err != nil {
			t.Fatal(err)
		}
		reqEqual(t, got.Command, "make test")

		got, err = echoTool[noArgs]("none").Target(nil)
		if err != nil {
			t.Fatal(err)
		}
		reqEqual(t, got.Main(), "")
		reqEqual(t, len(got.Paths), 0)
	})

	t.Run("TargetOfInvalidInputIsTypedError", func(t *testing.T) {
		t.Parallel()
		_, err := echoTool[sampleArgs]("sample").Target(json.RawMessage(`{"path":7}`))
		if !errors.Is(err, ErrInvalidArgs) {
			t.Fatalf("err = %v, want ErrInvalidArgs", err)
		}
		var argsErr *ArgsError
		if !errors.As(err, &argsErr) {
			t.Fatalf("err = %T, want *ArgsError", err)
		}
		reqEqual(t, argsErr.Tool, "sample")
		reqEqual(t, len(argsErr.Problems), 1)
	})

	t.Run("PanicBecomesErrorResult", func(t *testing.T) {
		t.Parallel()
		tl := New("boom", "panics", KindRead, func(context.Context, Call, noArgs) Result { panic("kaboom") })
		reqContains(t, reqErr(t, tl.Run(context.Background(), Call{})), "boom failed unexpectedly: kaboom")
	})

	t.Run("PassesCallThrough", func(t *testing.T) {
		t.Parallel()
		tl := New("id", "returns the call id", KindRead, func(_ context.Context, c Call, _ noArgs) Result {
			return Result{Content: c.ID}
		})
		reqEqual(t, reqOK(t, tl.Run(context.Background(), Call{ID: "toolu_42"})), "toolu_42")
	})

	t.Run("NonStructArgsPanic", func(t *testing.T) {
		t.Parallel()
		defer func() {
			if recover() == nil {
				t.Fatal("New accepted a non-struct argument type")
			}
		}()
		echoTool[string]("bad")
	})
}

// lazyArgs is an argument type no other test uses: whether its schema
// was derived shows in the process-wide cache (schemas).
type lazyArgs struct {
	Text string `json:"text"`
}

// TestSchemaDerivedOnFirstUse: building a tool, marking it idempotent,
// guarding it, naming it, registering it and listing names derive no
// schema; Info derives it once, for every tool of that type, and a call
// checks its input against it, whichever comes first and from however
// many goroutines.
func TestSchemaDerivedOnFirstUse(t *testing.T) {
	t.Parallel()
	schemas.Delete(reflect.TypeFor[lazyArgs]()) // a run before this one (-count) derived it
	derived := func() bool { _, ok := schemas.Load(reflect.TypeFor[lazyArgs]()); return ok }
	run := func(_ context.Context, _ Call, a lazyArgs) Result { return Result{Content: a.Text} }
	a, b := New("lazy", "d", KindRead, run), Guard(Idempotent(New("lazy_too", "d", KindRead, run)), denyAll{}, nil)
	r := NewRegistry(a, b)
	if Name(a) != "lazy" || Name(b) != "lazy_too" || !slices.Equal(r.Names(), []string{"lazy", "lazy_too"}) {
		t.Fatalf("names %q %q %q", Name(a), Name(b), r.Names())
	}
	if derived() {
		t.Fatal("the schema was derived before anything needed it")
	}
	var wg sync.WaitGroup
	results := make([]Result, 8)
	for i := range results {
		wg.Go(func() {
			if i%2 == 0 {
				results[i] = a.Run(context.Background(), Call{Input: json.RawMessage(`{"text": 1}`)})
				return
			}
			results[i] = Result{Content: string(b.Info().Schema)}
		})
	}
	wg.Wait()
	if !derived() {
		t.Fatal("no schema after Info and Run")
	}
	for i, res := range results {
		want := `"text"`
		if i%2 == 0 {
			want = `field "text"`
			if !res.IsError {
				t.Errorf("call %d: %q was not refused by the schema", i, res.Content)
			}
		}
		if !strings.Contains(res.Content, want) {
			t.Errorf("result %d = %q, want it to name %s", i, res.Content, want)
		}
	}
	if got, want := string(a.Info().Schema), string(b.Info().Schema); got != want || !b.Info().Idempotent {
		t.Errorf("schemas differ or b lost Idempotent: %s / %s", got, want)
	}
}

// denyAll refuses every call (TestSchemaDerivedOnFirstUse guards a tool
// it never runs).
type denyAll struct{}

func (denyAll) Decide(permission.Request) permission.Decision {
	return permission.Decision{Action: permission.Deny, Reason: "denied"}
}

func (denyAll) AddRule(permission.Rule) error { return errors.New("no rules") }

// TestBuiltinsNameThemselves: every built-in tool gives its name without
// deriving its schema (a Namer), so that a wrapper added without a Name
// method shows here rather than as a start that derives schemas again.
// (Idempotent's and Guard's wrappers are TestSchemaDerivedOnFirstUse's.)
func TestBuiltinsNameThemselves(t *testing.T) {
	t.Parallel()
	for _, b := range Builtins(BuiltinOptions{Workspace: t.TempDir()}) {
		if _, ok := b.(Namer); !ok {
			t.Errorf("%s (%T) is not a Namer: Name derives its schema", b.Info().Name, b)
		}
	}
}
