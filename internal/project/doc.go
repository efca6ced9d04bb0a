// Package project is the room of a workspace's own files (issue #30, not
// built yet): the instruction files (AGENTS.md, CLAUDE.md with its @path
// imports, the user-level file), Agent Skills (SKILL.md folders) and the
// skill tool, commands, and .claude/settings.json's permission rules and
// hook commands. It reads them once per workspace, caches them, caps
// their size, and reports what it skipped and why; nothing a project file
// says widens what the user's own config allows.
//
// It sits beside hook, above tool: it may import hook, tool, permission,
// config and llm; app asks it for a workspace's knowledge.
package project
