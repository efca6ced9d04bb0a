package project

import (
	"context"
	"fmt"
	"strings"

	"github.com/arbor-run/arbor/internal/tool"
)

// SkillToolName is the skill tool's name (Chord's); Claude Code's "Skill"
// reaches it too, as tool names are compared without case.
const SkillToolName = "skill"

type skillArgs struct {
	Name string `json:"name,omitempty" jsonschema_description:"Name of the skill to load, as the system prompt's Available skills lists it."`
	Args string `json:"args,omitempty" jsonschema_description:"Optional free-form arguments the skill's instructions may refer to."`
	// Skill is Claude Code's name of the argument.
	Skill string `json:"skill,omitempty" jsonschema_description:"Same as name (Claude Code's spelling)."`
}

// SkillTool loads a skill's instructions on demand (progressive
// disclosure: the prompt lists only names and descriptions). The answer
// is Chord's: the body in a <skill> element with the skill's folder, to
// which relative paths of the body refer; the folder's files are read
// with the file tools. nil when k has no skills.
func SkillTool(k *Knowledge) tool.Tool {
	if k == nil || len(k.Skills) == 0 {
		return nil
	}
	var names []string
	for _, s := range k.Skills {
		names = append(names, s.Name)
	}
	desc := "Load a skill's full instructions on demand when a task matches one of the available skills (" +
		strings.Join(names, ", ") + "). The result holds the skill's instructions and its root folder; relative paths in them are relative to that folder, whose files you read with the file tools."
	return tool.New(SkillToolName, desc, tool.KindInteract, func(_ context.Context, _ tool.Call, a skillArgs) tool.Result {
		name := strings.TrimSpace(a.Name)
		if name == "" {
			name = strings.TrimSpace(a.Skill)
		}
		name = strings.TrimPrefix(name, "/")
		if name == "" {
			return tool.Errorf("name is required: one of %s", strings.Join(names, ", "))
		}
		s, ok := k.Skill(name)
		if !ok {
			return tool.Errorf("no skill is called %q; the skills are %s", name, strings.Join(names, ", "))
		}
		var b strings.Builder
		b.WriteString("<skill>\n")
		fmt.Fprintf(&b, "<name>%s</name>\n<path>%s</path>\n<root>%s</root>\n", s.Name, s.Path, s.Dir)
		if args := strings.TrimSpace(a.Args); args != "" {
			fmt.Fprintf(&b, "<args>%s</args>\n", args)
		}
		b.WriteString("<notes>Relative paths in the skill resolve against <root>. Read the files it refers to only when needed.</notes>\n\n")
		body := expandArguments(s.Body, a.Args, false)
		b.WriteString(body)
		if !strings.HasSuffix(body, "\n") {
			b.WriteString("\n")
		}
		b.WriteString("</skill>")
		return tool.Result{Content: b.String()}
	})
}
