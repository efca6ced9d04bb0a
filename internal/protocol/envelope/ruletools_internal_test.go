package envelope

import (
	"slices"
	"testing"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/tool"
)

// TestRulesMayNameTheEnvelopeTools: app lists the tools this front end
// adds among the names permission rules may give (app.RuleTools), so a
// rule naming done or handoff is not reported as naming no tool.
func TestRulesMayNameTheEnvelopeTools(t *testing.T) {
	t.Parallel()
	s := &server{}
	for _, tl := range []tool.Tool{s.doneTool(), s.handoffTool()} {
		if !slices.Contains(app.RuleTools(), tool.Name(tl)) {
			t.Errorf("app.RuleTools() lacks %s: add it to app's frontEndTools", tool.Name(tl))
		}
	}
}
