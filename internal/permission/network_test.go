package permission_test

import (
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/permission"
)

// TestNetworkCalls: web_fetch's calls are decided by host: domain rules
// allow, ask and deny; the mode asks where no rule decides (trust allows,
// a host on the sandbox's allow-list runs); a private address needs a
// rule naming it in every mode, trust included.
func TestNetworkCalls(t *testing.T) {
	t.Parallel()
	fetch := func(host string, private, sandboxed bool) permission.Request {
		return permission.Request{Tool: "web_fetch", Class: permission.ClassNetwork, Host: host, Private: private, Sandboxed: sandboxed}
	}
	b := setup(t, permission.ModeDefault)
	d := b.engine.Decide(fetch("example.com", false, false))
	if d.Action != permission.Ask || !strings.Contains(d.Reason, "reaching example.com") || d.SuggestedRule != "web_fetch(domain:example.com)" {
		t.Fatalf("default mode, no rule: %+v", d)
	}
	if d := b.engine.Decide(fetch("example.com", false, true)); d.Action != permission.Allow {
		t.Fatalf("a host on the sandbox's allow-list: %+v", d)
	}
	b.add(t, "web_fetch(domain:*.golang.org)", permission.Allow, permission.ScopeSession)
	b.add(t, "web_fetch(domain:evil.example)", permission.Deny, permission.ScopeSession)
	for host, want := range map[string]permission.Action{
		"pkg.go.dev": permission.Ask, "golang.org": permission.Allow, "proxy.golang.org": permission.Allow,
		"notgolang.org": permission.Ask, "evil.example": permission.Deny, "EVIL.example": permission.Deny,
	} {
		if d := b.engine.Decide(fetch(host, false, false)); d.Action != want {
			t.Errorf("%s: %s (%s), want %s", host, d.Action, d.Reason, want)
		}
	}
	if d := b.engine.Decide(fetch("evil.example", false, true)); d.Action != permission.Deny {
		t.Fatalf("a deny rule must beat the allow-list: %+v", d)
	}

	trust := setup(t, permission.ModeTrust)
	if d := trust.engine.Decide(fetch("example.com", false, false)); d.Action != permission.Allow {
		t.Fatalf("trust: %+v", d)
	}
	d = trust.engine.Decide(fetch("127.0.0.1", true, false))
	if d.Action != permission.Deny || !strings.Contains(d.Reason, "web_fetch(domain:127.0.0.1)") {
		t.Fatalf("a loopback address under trust without a rule: %+v", d)
	}
	trust.add(t, "web_fetch", permission.Allow, permission.ScopeSession)
	if d := trust.engine.Decide(fetch("10.0.0.8", true, false)); d.Action != permission.Deny {
		t.Fatalf("a rule without a domain must not open private addresses: %+v", d)
	}
	trust.add(t, "web_fetch(domain:127.0.0.1)", permission.Allow, permission.ScopeSession)
	if d := trust.engine.Decide(fetch("127.0.0.1", true, false)); d.Action != permission.Allow {
		t.Fatalf("a loopback address a rule names: %+v", d)
	}
	if _, err := permission.ParseRule("web_fetch(domain:a*b.com)", permission.Allow, permission.ScopeSession); err == nil {
		if err := trust.engine.AddRule(permission.Rule{Tool: "web_fetch", Pattern: "domain:a*b.com", Action: permission.Allow, Scope: permission.ScopeSession}); err == nil {
			t.Fatal("a domain pattern with a * inside was taken")
		}
	}
}
