package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"

	"github.com/invopop/jsonschema"
)

// Targeter is implemented by argument structs that can say what a call acts
// on. The typed adapter calls it from Tool.Target.
type Targeter interface {
	Target() Target
}

// ErrInvalidArgs is what every argument decoding failure unwraps to.
var ErrInvalidArgs = errors.New("invalid arguments")

// ArgsError says why a tool's input did not decode. Its message is written
// for the model: it names the tool and every offending field.
type ArgsError struct {
	Tool string
	// Problems are the individual complaints in a stable order, e.g.
	// `missing required field "path"`.
	Problems []string
}

func (e *ArgsError) Error() string {
	return fmt.Sprintf("invalid arguments for %s: %s", e.Tool, strings.Join(e.Problems, "; "))
}

func (e *ArgsError) Unwrap() error { return ErrInvalidArgs }

// New returns a Tool whose arguments are the struct A. The JSON schema the
// model sees is derived from A: properties from json tags, descriptions from
// `jsonschema_description:"…"` or `jsonschema:"description=…"` tags,
// required = every field without omitempty/omitzero, no additional
// properties. Input is checked against that same schema before it is
// decoded, so the model gets one error naming every wrong field. Empty or
// null input means {}.
//
// If A or *A implements Targeter, Target decodes the input and asks it;
// otherwise Target returns Target{}.
//
// The schema is derived when it is first needed, not here: a session
// builds its tools at start-up and may never show them to a model, and
// deriving them all cost a start 200 page faults, a few ms of CPU and a
// third of a MiB of private memory (docs/benchmarks.md). Info shows the
// text its package generated when there is one (generated.go), and a
// call's input is checked against the reflected schema. Name gives a
// tool's name without either, and so does every wrapper that is a Namer.
//
// New panics when A is not a struct: that is a programming error.
func New[A any](name, description string, kind Kind, run func(ctx context.Context, call Call, args A) Result) Tool {
	if t := reflect.TypeFor[A](); t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("tool.New(%q): argument type %s is not a struct", name, t))
	}
	return &typed[A]{info: Info{Name: name, Description: description, Kind: kind}, run: run}
}

type derived struct {
	schema *jsonschema.Schema
	raw    json.RawMessage
	closed bool // closedObjects(schema)
}

// schemas caches the schema of each argument type: tools are built per
// session (and per tree node), reflection is not cheap, and a schema
// depends on the type alone. Schemas are never mutated after derivation.
var schemas sync.Map // reflect.Type → derived

func schemaOf(t reflect.Type) derived {
	if d, ok := schemas.Load(t); ok {
		return d.(derived)
	}
	r := jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true, Anonymous: true}
	schema := r.ReflectFromType(t)
	schema.Version = ""
	schema.Type = "object"
	raw, err := json.Marshal(schema)
	if err != nil {
		panic(fmt.Sprintf("tool: marshal the schema of %s: %v", t, err))
	}
	d := derived{schema, raw, closedObjects(schema)}
	schemas.Store(t, d)
	return d
}

// closedObjects reports whether every object s describes, at any depth,
// forbids properties it does not list, as every struct's derived schema
// does. Then checkSchema refuses every field the struct has not, and the
// struct can be decoded without a second check of its own. A type with
// a JSONSchema method of its own may describe an open object.
func closedObjects(s *jsonschema.Schema) bool {
	if s == nil {
		return true
	}
	hasProps := s.Properties != nil && s.Properties.Len() > 0
	if (s.Type == "object" || hasProps) && s.AdditionalProperties != jsonschema.FalseSchema {
		return false // a map, or an object a JSONSchema method left open
	}
	if hasProps {
		for p := s.Properties.Oldest(); p != nil; p = p.Next() {
			if !closedObjects(p.Value) {
				return false
			}
		}
	}
	subs := []*jsonschema.Schema{s.Items}
	subs = append(append(append(subs, s.OneOf...), s.AnyOf...), s.AllOf...)
	for _, sub := range subs {
		if !closedObjects(sub) {
			return false
		}
	}
	return true
}

// typed is the Tool New returns. It is immutable after construction but
// for its schemas: the one shown (Info), set once by show, and the
// reflected one that checks a call's input, set once by derive.
type typed[A any] struct {
	info Info // without its Schema
	run  func(ctx context.Context, call Call, args A) Result

	showOnce sync.Once
	shown    json.RawMessage // shownSchema: generated, or reflected

	once sync.Once
	derived
}

// show sets the schema shown to the model, once.
func (t *typed[A]) show() json.RawMessage {
	t.showOnce.Do(func() { t.shown = shownSchema(reflect.TypeFor[A]()) })
	return t.shown
}

// derive sets the schema, once; schemaOf keeps it for the type.
func (t *typed[A]) derive() {
	t.once.Do(func() { t.derived = schemaOf(reflect.TypeFor[A]()) })
}

func (t *typed[A]) Info() Info {
	info := t.info
	info.Schema = t.show()
	return info
}

func (t *typed[A]) Name() string { return t.info.Name }

func (t *typed[A]) Target(input json.RawMessage) (Target, error) {
	args, err := t.decode(input)
	if err != nil {
		return Target{}, err
	}
	if tg, ok := any(args).(Targeter); ok {
		return tg.Target(), nil
	}
	if tg, ok := any(&args).(Targeter); ok {
		return tg.Target(), nil
	}
	return Target{}, nil
}

func (t *typed[A]) Run(ctx context.Context, call Call) (res Result) {
	args, err := t.decode(call.Input)
	if err != nil {
		return Result{Content: err.Error(), IsError: true}
	}
	// A panicking tool must not take the whole run (and every sibling agent)
	// down with it; the model sees a failed call instead.
	defer func() {
		if p := recover(); p != nil {
			res = Errorf("%s failed unexpectedly: %v", t.info.Name, p)
		}
	}()
	return t.run(ctx, call, args)
}

// decode checks input against the schema and decodes it into A.
func (t *typed[A]) decode(input json.RawMessage) (A, error) {
	var args A
	input = bytes.TrimSpace(input)
	if len(input) == 0 || bytes.Equal(input, []byte("null")) {
		input = []byte("{}")
	}
	fail := func(problems ...string) (A, error) {
		return args, &ArgsError{Tool: t.info.Name, Problems: problems}
	}

	generic, dup, ok := decodeGeneric(input)
	if !ok { // the Decoder says what is wrong
		dec := json.NewDecoder(bytes.NewReader(input))
		dec.UseNumber()
		if err := dec.Decode(&generic); err != nil {
			return fail("input is not valid JSON: " + err.Error())
		}
		if _, err := dec.Token(); err != io.EOF {
			return fail("unexpected data after the JSON object")
		}
	}
	t.derive()
	if problems := checkSchema(t.schema, generic, ""); len(problems) > 0 {
		return fail(problems...)
	}

	// When the schema closes every object, its check has refused every
	// unknown field: fillArgs sets the fields from the checked value when
	// they are plain, and plain Unmarshal decodes the rest without a
	// second decoder and its buffer (a few percent of a 10,000-node run's
	// allocations). Otherwise the decoder refuses them itself.
	var err error
	switch {
	case t.closed && !dup && fillArgs(generic, reflect.ValueOf(&args).Elem()):
		// Filled from the checked value, as Unmarshal would have.
	case t.closed:
		var zero A
		args = zero // what fillArgs set before it gave up
		err = json.Unmarshal(input, &args)
	default:
		strict := json.NewDecoder(bytes.NewReader(input))
		strict.DisallowUnknownFields()
		err = strict.Decode(&args)
	}
	if err != nil {
		return fail(describeDecodeError(err))
	}
	return args, nil
}

// describeDecodeError words what encoding/json found for the model. The
// schema check catches nearly everything first; this covers what a schema
// cannot say (an integer that overflows its Go type, for instance).
func describeDecodeError(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return fmt.Sprintf("field %q: cannot use %s as %s", typeErr.Field, typeErr.Value, typeErr.Type)
	}
	return err.Error()
}
