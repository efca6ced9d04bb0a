// Package project reads a workspace's own files: the instruction files
// (AGENTS.md, CLAUDE.md with its @path imports, the user-level file,
// nested files by folder), Agent Skills (SKILL.md folders) and the skill
// tool, custom slash commands, and the settings files' permission rules
// (Claude Code's syntax, mapped to arbor's) and hook commands. See
// docs/project-files.md for what is read, from where, in which order.
//
// Invariants: Load never fails; what it cannot use (a malformed file, a
// rule with no arbor equivalent, text past the cap) is a Problem naming
// the file and what is wrong, and the rest is used. Every file is read
// with a size cap. Nothing a project file says widens the user's own
// configuration, except allow rules written in the project's settings.
//
// It sits beside hook, above tool: it imports hook, tool and permission;
// app asks it for a workspace's knowledge.
package project
