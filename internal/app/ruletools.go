package app

import (
	"slices"
	"sync"

	"github.com/arbor-run/arbor/internal/project"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
)

// frontEndTools are the tools a front end adds to its sessions, which
// this package cannot list from their code (the envelope protocol's
// /loop done and planner handoff; its test checks they are here).
var frontEndTools = []string{"done", "handoff"}

// claudeCodeOnlyTools are Claude Code's tools that have no arbor
// counterpart (tool.ClaudeCodeTools lists those that have): a Claude
// Code node's permission prompts name them (claudeTool), so rules may.
var claudeCodeOnlyTools = []string{"NotebookEdit", "NotebookRead", "WebSearch", "Task", "ExitPlanMode", "SlashCommand"}

// RuleTools are the tool names a permission rule may give
// (permission.Options.Tools): arbor's own tools (built-in, background
// jobs, skill, the tree's, the front ends'), and the names of Claude
// Code's tools, which a Claude Code node's calls carry. An MCP tool
// (mcp__server__tool) is any server's, so none is listed.
func RuleTools() []string { return slices.Clone(ruleTools()) }

// ruleTools computes RuleTools once: making the tools to read their
// names takes a tenth of a millisecond.
var ruleTools = sync.OnceValue(func() []string {
	names := append(tool.BuiltinNames(), project.SkillToolName)
	names = append(names, tree.ToolNames()...)
	names = append(names, frontEndTools...)
	names = append(names, tool.ClaudeCodeTools()...)
	names = append(names, claudeCodeOnlyTools...)
	slices.Sort(names)
	return slices.Compact(names)
})
