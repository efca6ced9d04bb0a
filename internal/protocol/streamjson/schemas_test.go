package streamjson

import (
	"testing"

	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tool/schematest"
)

// The schemas this package's tools show the model are generated
// (zz_schemas.go) from their argument structs, listed here.
func TestGeneratedSchemas(t *testing.T) {
	schematest.Check(t, tool.RenderSchemas("streamjson", hostShellArgs{}))
}
