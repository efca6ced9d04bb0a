package tool

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkNewRegistry builds the registry of a node agent with twenty
// tools, as every node of a tree does once.
func BenchmarkNewRegistry(b *testing.B) {
	type args struct{}
	tools := make([]Tool, 20)
	for i := range tools {
		tools[i] = New(fmt.Sprintf("tool_%d", i), "a tool", KindRead, func(context.Context, Call, args) Result { return Result{} })
	}
	b.ReportAllocs()
	for b.Loop() {
		NewRegistry(tools...)
	}
}
