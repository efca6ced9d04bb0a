package tool

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestAgentCommandsDoWithoutArborsCredentials: an agent's shell command
// and background job run without the variables of arbor's credentials and
// those BuiltinOptions.WithheldEnv names, and with the rest of arbor's
// environment, and the project settings' env (BuiltinOptions.Env) over
// it; a person's own command (RunCommand) keeps them all. Before,
// `env` in an agent's shell printed every token and the store's password
// into the transcript (redaction covered only the providers' keys, and a
// model can encode a key past it). (Not parallel: it sets variables.)
func TestAgentCommandsDoWithoutArborsCredentials(t *testing.T) {
	withheld := append([]string{"MY_PROVIDER_KEY"}, CredentialEnv...)
	for _, name := range append(withheld, "KEEP_THIS") {
		t.Setenv(name, "value-of-"+name)
	}
	t.Setenv("OVERRIDDEN", "arbor")
	check := func(where, out string, keep bool) {
		t.Helper()
		for _, name := range withheld {
			if strings.Contains(out, "value-of-"+name) != keep {
				t.Fatalf("%s: %s present = %v, want %v:\n%s", where, name, !keep, keep, out)
			}
		}
		if !strings.Contains(out, "KEEP_THIS=value-of-KEEP_THIS") {
			t.Fatalf("%s: the rest of the environment is missing:\n%s", where, out)
		}
		// The project settings' env (BuiltinOptions.Env) comes over
		// arbor's; a person's own command runs with arbor's alone.
		settings := strings.Contains(out, "FROM_SETTINGS=s1") && strings.Contains(out, "OVERRIDDEN=settings") &&
			!strings.Contains(out, "OVERRIDDEN=arbor")
		if settings == keep {
			t.Fatalf("%s: the settings' env present = %v, want %v:\n%s", where, settings, !keep, out)
		}
	}
	root := t.TempDir()
	jobs := NewJobs(nil)
	defer jobs.Close()
	sh := newBackgroundShell(newWorkRoot(root, nil), BuiltinOptions{Workspace: root, WithheldEnv: []string{"MY_PROVIDER_KEY"},
		Env: []string{"FROM_SETTINGS=s1", "OVERRIDDEN=settings"}}, jobs)
	ctx := context.Background()
	res := sh.Run(ctx, shellCall("env", 0))
	if res.IsError {
		t.Fatalf("env: %s", res.Content)
	}
	check("the shell tool", res.Content, false)

	raw := `{"command":"env","run_in_background":true}`
	if res := sh.Run(ctx, Call{ID: "bg", Input: []byte(raw)}); res.IsError || !strings.Contains(res.Content, "job_1") {
		t.Fatalf("background env: %s", res.Content)
	}
	var out strings.Builder
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		o, err := jobs.Output("job_1", 1<<20, nil)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString(o.Output)
		if !o.Running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the background env never ended")
		}
	}
	check("a background job", out.String(), false)

	check("a person's command", RunCommand(ctx, nil, root, "env", time.Minute, 1<<20, time.Second).Output, true)
}
