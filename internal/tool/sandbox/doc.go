// Package sandbox is the room of OS confinement (issue #29, not built
// yet): given a policy (where a process may write, what it may not read,
// which hosts it may reach), it turns a command into a wrapped command
// that the kernel confines, and reports what it blocked. The shell tool,
// background jobs, and (where the config asks) stdio MCP servers and hook
// commands ask it for the wrapped command; it knows nothing of agents,
// tools or protocols.
//
// It sits below tool: it may import the standard library, config and
// llm-free helpers only, so that every starter of processes can use it.
package sandbox
