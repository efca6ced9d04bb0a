// Package layout holds no code: its test checks the shape of the
// repository against docs/architecture.md. Every package sits on one of
// the floors the document lists, from cmd at the top to llm at the
// bottom; a package imports only packages on its own floor or below;
// no non-test Go file passes 500 lines; and no package-level variable
// compiles a regular expression while its package initialises.
//
// See the graph with: go test ./internal/layout -run TestLayers -v
package layout
