package permission

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"gopkg.in/yaml.v3"
)

// Role rule files hold the project or user rules of one main-agent role
// (spec 000: "always allow" with rule_scope project or user_global is
// stored in .arbor/agents/<role>.yaml or $XDG_CONFIG_HOME/arbor/agents/
// <role>.yaml). Their layout is the one Chord writes to its own
// agents/<role>.yaml: a permission mapping from tool to either an action
// (every call of the tool) or a mapping from pattern to action:
//
//	permission:
//	  read_file: allow
//	  shell:
//	    "re:^git status$": allow
//	    "git log*": allow
//
// A pattern is arbor's: a glob, or re: and a regular expression; "*" as
// a pattern matches every call. Other keys of the file are kept.

// loadRoleRules reads a role rule file; a missing file holds no rules.
// Rules come in the file's tool order, then pattern order.
func loadRoleRules(path string, scope Scope, rename func(string) string) ([]Rule, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrRuleFile, path, err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrRuleFile, path, err)
	}
	perm := roleMapping(&doc, false)
	if perm == nil {
		return nil, nil
	}
	var rules []Rule
	add := func(tool, pattern, action string) error {
		a, err := ParseAction(action)
		if err != nil {
			return fmt.Errorf("%w %s: %s %q: %w", ErrRuleFile, path, tool, pattern, err)
		}
		spec := tool
		if pattern != "" && pattern != "*" {
			spec = tool + "(" + pattern + ")"
		}
		r, err := ParseRule(rename(spec), a, scope)
		if err != nil {
			return fmt.Errorf("%w %s: %w", ErrRuleFile, path, err)
		}
		rules = append(rules, r)
		return nil
	}
	for i := 0; i+1 < len(perm.Content); i += 2 {
		tool, v := perm.Content[i].Value, perm.Content[i+1]
		switch v.Kind {
		case yaml.ScalarNode:
			if err := add(tool, "", v.Value); err != nil {
				return nil, err
			}
		case yaml.MappingNode:
			for j := 0; j+1 < len(v.Content); j += 2 {
				if err := add(tool, v.Content[j].Value, v.Content[j+1].Value); err != nil {
					return nil, err
				}
			}
		default:
			return nil, fmt.Errorf("%w %s: permission.%s must be an action or a mapping of patterns to actions", ErrRuleFile, path, tool)
		}
	}
	return rules, nil
}

// appendRoleRule adds r to the role file, creating it when needed and
// keeping the rest of the file.
func appendRoleRule(path string, r Rule) error {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w %s: %w", ErrRuleFile, path, err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%w %s: %w", ErrRuleFile, path, err)
	}
	if doc.Kind == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode,
			HeadComment: "arbor rules of this role: permission: {tool: action | {pattern: action}}; see docs/permissions.md"}}}
	}
	perm := roleMapping(&doc, true)
	if perm == nil {
		return fmt.Errorf("%w %s: the document must be a mapping", ErrRuleFile, path)
	}
	pattern := r.Pattern
	if pattern == "" {
		pattern = "*"
	}
	var tool *yaml.Node
	for i := 0; i+1 < len(perm.Content); i += 2 {
		if perm.Content[i].Value == r.Tool {
			tool = perm.Content[i+1]
		}
	}
	switch {
	case tool == nil:
		tool = &yaml.Node{Kind: yaml.MappingNode}
		perm.Content = append(perm.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: r.Tool}, tool)
	case tool.Kind == yaml.ScalarNode: // "tool: action" becomes {"*": action}
		*tool = yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
			{Kind: yaml.ScalarNode, Value: "*", Style: yaml.DoubleQuotedStyle}, {Kind: yaml.ScalarNode, Value: tool.Value}}}
	case tool.Kind != yaml.MappingNode:
		return fmt.Errorf("%w %s: permission.%s must be an action or a mapping of patterns to actions", ErrRuleFile, path, r.Tool)
	}
	for j := 0; j+1 < len(tool.Content); j += 2 {
		if tool.Content[j].Value == pattern {
			tool.Content[j+1].Value = string(r.Action)
			return writeDoc(path, &doc, r.Scope)
		}
	}
	tool.Content = append(tool.Content,
		&yaml.Node{Kind: yaml.ScalarNode, Value: pattern, Style: yaml.DoubleQuotedStyle},
		&yaml.Node{Kind: yaml.ScalarNode, Value: string(r.Action)})
	return writeDoc(path, &doc, r.Scope)
}

// roleMapping returns the document's permission mapping, creating it when
// create is set; nil when there is none (or the document is no mapping).
func roleMapping(doc *yaml.Node, create bool) *yaml.Node {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "permission" {
			continue
		}
		v := root.Content[i+1]
		switch {
		case v.Kind == yaml.MappingNode:
			return v
		case create && v.Kind == yaml.ScalarNode && v.Tag == "!!null":
			*v = yaml.Node{Kind: yaml.MappingNode}
			return v
		}
		return nil
	}
	if !create {
		return nil
	}
	v := &yaml.Node{Kind: yaml.MappingNode}
	root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "permission"}, v)
	return v
}
