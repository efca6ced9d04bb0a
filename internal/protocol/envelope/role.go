package envelope

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// The built-in roles: builder is the agent arbor runs; planner is listed
// only when the workspace defines it.
const (
	roleBuilder = "builder"
	rolePlanner = "planner"
)

// roleFile is .arbor/roles/<name>.yaml.
type roleFile struct {
	// System is appended to the system prompt of the role's sessions.
	System string `yaml:"system"`
	// Mode is "main" (the default) or "subagent": a sub-agent definition,
	// which is not a main role.
	Mode string `yaml:"mode"`
}

const modeSubagent = "subagent"

func (s *server) rolesDir() string { return filepath.Join(s.ws().Workspace, ".arbor", "roles") }

// roleNames lists the main roles in the spec's order: builder, planner if
// configured, then the custom roles alphabetically.
func (s *server) roleNames() ([]string, error) {
	files, err := filepath.Glob(filepath.Join(s.rolesDir(), "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("list roles: %w", err)
	}
	names := []string{roleBuilder}
	var custom []string
	for _, f := range files {
		switch name := strings.TrimSuffix(filepath.Base(f), ".yaml"); name {
		case roleBuilder:
		case rolePlanner:
			names = append(names, rolePlanner)
		default:
			if rf, err := s.loadRole(name); err == nil && rf.Mode == modeSubagent {
				continue
			}
			custom = append(custom, name)
		}
	}
	slices.Sort(custom)
	return append(names, custom...), nil
}

// loadRole reads the role's file; builder needs none.
func (s *server) loadRole(name string) (roleFile, error) {
	var rf roleFile
	raw, err := os.ReadFile(filepath.Join(s.rolesDir(), name+".yaml"))
	if name == roleBuilder && errors.Is(err, fs.ErrNotExist) {
		return rf, nil
	}
	if err != nil {
		return rf, fmt.Errorf("role %s: %w", name, err)
	}
	if err := yaml.Unmarshal(raw, &rf); err != nil {
		return rf, fmt.Errorf("role %s: %w", name, err)
	}
	return rf, nil
}

// role answers the role command.
func (s *server) role(c roleCmd) {
	switch c.Action {
	case "list":
		s.wire.write(typeRoleResponse, 0, s.roleList(""))
	case "set":
		s.wire.write(typeRoleResponse, 0, s.setRole(c.Role))
	default:
		s.wire.write(typeRoleResponse, 0, roleResponse{Message: fmt.Sprintf("unknown role action %q (want list or set)", c.Action)})
	}
}

// roleList is a successful role_response with the current role.
func (s *server) roleList(msg string) roleResponse {
	names, err := s.roleNames()
	if err != nil {
		return roleResponse{Message: err.Error()}
	}
	cur := s.wire.get().role
	r := roleResponse{OK: true, Message: msg, Role: cur, Roles: make([]roleEntry, 0, len(names))}
	for _, n := range names {
		r.Roles = append(r.Roles, roleEntry{Name: n, Current: n == cur})
	}
	return r
}

// setRole switches the current role at once, even while a turn runs: the
// role lives in the server's state, not in the running agent.
func (s *server) setRole(name string) roleResponse {
	name = strings.TrimSpace(name)
	if name == "" {
		return roleResponse{Message: "role is required"}
	}
	cur, pending := s.wire.get().role, s.ix.pendingHandoff() != nil
	if pending {
		return roleResponse{Message: "resolve the pending handoff before switching role"}
	}
	if name == cur {
		return roleResponse{Message: "already the active role: " + name}
	}
	names, err := s.roleNames()
	if err != nil {
		return roleResponse{Message: err.Error()}
	}
	if !slices.Contains(names, name) {
		if rf, err := s.loadRole(name); err == nil && rf.Mode == modeSubagent {
			return roleResponse{Message: fmt.Sprintf("role %s is only defined for sub-agents", name)}
		}
		return roleResponse{Message: fmt.Sprintf("unknown role: %s (roles: %s)", name, strings.Join(names, ", "))}
	}
	rf, err := s.loadRole(name)
	if err != nil {
		return roleResponse{Message: err.Error()}
	}
	s.ctl.mu.Lock()
	s.ix.mu.Lock()
	if s.ix.handoff != nil { // published while the role file was read
		s.ix.mu.Unlock()
		s.ctl.mu.Unlock()
		return roleResponse{Message: "resolve the pending handoff before switching role"}
	}
	s.ctl.roleSystem = rf.System
	s.wire.push(evRoleChange, roleChange{Role: name}, func(st *state) { st.role = name })
	s.ix.mu.Unlock()
	s.ctl.mu.Unlock()
	return s.roleList("switched to role " + name)
}
