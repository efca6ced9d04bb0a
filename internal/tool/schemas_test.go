package tool

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/tool/schematest"
)

// The schemas this package's tools show the model are generated
// (zz_schemas.go) from their argument structs, listed here.
func TestGeneratedSchemas(t *testing.T) {
	schematest.Check(t, RenderSchemas("tool", readFileArgs{}, writeFileArgs{}, globArgs{}, todoWriteArgs{}, viewImageArgs{}, editArgs{}, askUserArgs{}, listDirectoryArgs{}, deleteArgs{}, shellArgs{}, askingShellArgs{}, sandboxShellArgs{}, grepArgs{}, jobOutputArgs{}, applyPatchArgs{}, webFetchArgs{}, jobKillArgs{}))
}

type shownArgs struct {
	Path string `json:"path"`
}

// Info shows a table's text without reflecting; a call's input is still
// checked against the schema reflected from the struct.
func TestInfoShowsTheGeneratedSchema(t *testing.T) {
	const text = `{"properties":{"path":{"type":"string"}},"type":"object","generated":true}`
	typ := reflect.TypeFor[shownArgs]()
	schemas.Delete(typ) // a run before this one (-count) derived it
	Generated(func(key string) string {
		if key == SchemaKey(typ) {
			return text
		}
		return ""
	})
	tl := New("shown", "a tool with a generated schema", KindRead, func(context.Context, Call, shownArgs) Result {
		return Result{Content: "ran"}
	})
	if got := string(tl.Info().Schema); got != text {
		t.Fatalf("Info().Schema = %s, want the table's %s", got, text)
	}
	if _, ok := schemas.Load(typ); ok {
		t.Fatal("Info reflected a schema its package's table has")
	}
	res := tl.Run(context.Background(), Call{Input: json.RawMessage(`{"path":"a","other":1}`)})
	if !res.IsError || !strings.Contains(res.Content, "other") {
		t.Fatalf("a call with an unknown field = %+v, want it refused by the reflected schema", res)
	}
	if _, ok := schemas.Load(typ); !ok {
		t.Fatal("a call's input was not checked against the reflected schema")
	}
	if res := tl.Run(context.Background(), Call{Input: json.RawMessage(`{"path":"a"}`)}); res.IsError || res.Content != "ran" {
		t.Fatalf("a valid call = %+v", res)
	}
}
