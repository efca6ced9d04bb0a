package permission_test

import (
	"fmt"
	"os"

	"github.com/arbor-run/arbor/internal/permission"
)

func ExampleEngine_Decide() {
	ws, err := os.MkdirTemp("", "arbor-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(ws)

	e, err := permission.New(permission.Options{Mode: permission.ModeDefault, Workspace: ws})
	if err != nil {
		panic(err)
	}
	for _, spec := range []string{"shell(git *)", "shell(grep *)"} {
		r, _ := permission.ParseRule(spec, permission.Allow, permission.ScopeSession)
		_ = e.AddRule(r)
	}
	deny, _ := permission.ParseRule("shell(git push*)", permission.Deny, permission.ScopeSession)
	_ = e.AddRule(deny)

	for _, cmd := range []string{
		"git log --oneline | grep fix",
		"git status && rm -rf /",
		"git push origin main",
		"go test ./...",
	} {
		d := e.Decide(permission.Request{Tool: "shell", Class: permission.ClassExecute, Command: cmd})
		if d.SuggestedRule != "" {
			fmt.Printf("%-30s %s, suggest %s\n", cmd, d.Action, d.SuggestedRule)
			continue
		}
		fmt.Printf("%-30s %s\n", cmd, d.Action)
	}
	// Output:
	// git log --oneline | grep fix   allow
	// git status && rm -rf /         ask
	// git push origin main           deny
	// go test ./...                  ask, suggest shell(go test *)
}
