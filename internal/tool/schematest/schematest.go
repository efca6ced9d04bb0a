// Package schematest keeps a package's generated tool schemas
// (zz_schemas.go, see internal/tool/generated.go) equal to what tool.New
// derives from its argument structs. A package with argument structs
// lists them in a test:
//
//	func TestGeneratedSchemas(t *testing.T) {
//		schematest.Check(t, tool.RenderSchemas("tree", completeArgs{}, waitArgs{}))
//	}
//
// which fails when the file is missing or stale, and with
// ARBOR_UPDATE_SCHEMAS=1 writes it instead:
//
//	ARBOR_UPDATE_SCHEMAS=1 go test -run TestGeneratedSchemas ./internal/...
//
// An environment variable rather than the -update flag of the golden
// tests: one command updates every package, and packages without the
// flag would refuse it. It does not import package tool, so that tool's
// own tests can use it.
package schematest

import (
	"bytes"
	"os"
	"testing"
)

// File is the generated file's name, in the package's directory.
const File = "zz_schemas.go"

// Check compares want, a rendered file (tool.RenderSchemas), with File in
// the test's directory, or writes it when ARBOR_UPDATE_SCHEMAS=1.
func Check(t *testing.T, want []byte) {
	t.Helper()
	if os.Getenv("ARBOR_UPDATE_SCHEMAS") == "1" {
		if err := os.WriteFile(File, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(File)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s is missing or stale (%v): an argument struct changed without its generated schema; run\n"+
			"\tARBOR_UPDATE_SCHEMAS=1 go test -run TestGeneratedSchemas ./internal/...", File, err)
	}
}
