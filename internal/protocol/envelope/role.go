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

	"github.com/arbor-run/arbor/internal/app"
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

// systemLocked is the system prompt of sess under the current role, as
// app.OpenSession composes it: the standing prompt, then the role's
// text. ctl.mu must be held.
func (s *server) systemLocked(sess *app.Session) string {
	system := s.ctl.work.StandingPrompt(sess.Tools.Names())
	if s.ctl.roleSystem != "" {
		system += "\n" + s.ctl.roleSystem
	}
	return system
}

// roleRules makes role's rule files (.arbor/agents/<role>.yaml and
// $XDG_CONFIG_HOME/arbor/agents/<role>.yaml) those of view's permission
// engine: "always allow" in scope project or user_global stores its rule
// there, and the rules already in them apply. No lock may be held (it
// reads the files).
func roleRules(view *app.App, role string) error {
	cfg := view.Config()
	if err := view.Permissions.SetRoleFiles(cfg.ProjectRoleRulesFile(role), cfg.UserRoleRulesFile(role)); err != nil {
		return fmt.Errorf("role %s: %w", role, err)
	}
	return nil
}

// role answers the role command.
func (s *server) role(c roleCmd) {
	switch c.Action {
	case "list":
		s.wire.write(typeRoleResponse, 0, s.roleList(""))
	case "set":
		s.wire.write(typeRoleResponse, 0, s.setRole(c.Role))
	default:
		s.wire.write(typeRoleResponse, 0, s.roleFailed(fmt.Sprintf("unknown role action %q (want list or set)", c.Action)))
	}
}

// roleFailed is a failed role_response: ok false with msg, and the
// current role and the list as role list reports them (Chord omits them
// on failure; a client may use them to redraw its role picker).
func (s *server) roleFailed(msg string) roleResponse {
	r := s.roleList("")
	if !r.OK { // the roles could not be listed
		return roleResponse{Message: msg, Role: s.wire.get().role}
	}
	r.OK, r.Message = false, msg
	return r
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
		return s.roleFailed("role is required")
	}
	cur, pending := s.wire.get().role, s.ix.pendingHandoff() != nil
	if pending {
		return s.roleFailed("resolve the pending handoff before switching role")
	}
	if name == cur {
		return s.roleFailed("already the active role: " + name)
	}
	names, err := s.roleNames()
	if err != nil {
		return s.roleFailed(err.Error())
	}
	if !slices.Contains(names, name) {
		if rf, err := s.loadRole(name); err == nil && rf.Mode == modeSubagent {
			return s.roleFailed(fmt.Sprintf("role %s is only defined for sub-agents", name))
		}
		return s.roleFailed(fmt.Sprintf("unknown role: %s (roles: %s)", name, strings.Join(names, ", ")))
	}
	rf, err := s.loadRole(name)
	if err != nil {
		return s.roleFailed(err.Error())
	}
	if err := roleRules(s.ws(), name); err != nil {
		return s.roleFailed(err.Error())
	}
	s.ctl.mu.Lock()
	s.ix.mu.Lock()
	if s.ix.handoff != nil { // published while the role file was read
		s.ix.mu.Unlock()
		s.ctl.mu.Unlock()
		return s.roleFailed("resolve the pending handoff before switching role")
	}
	s.ctl.roleSystem = rf.System
	// The running session's agent takes the role's system prompt from its
	// next model request, also during a turn.
	s.ctl.sess.Agent.SetSystem(s.systemLocked(s.ctl.sess))
	s.wire.push(evRoleChange, roleChange{Role: name}, func(st *state) { st.role = name })
	s.ix.mu.Unlock()
	s.ctl.mu.Unlock()
	return s.roleList("switched to role " + name)
}
