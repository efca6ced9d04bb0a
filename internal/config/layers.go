package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/arbor-run/arbor/internal/llm"
)

// fileConfig is one config file as written. Pointers tell "absent" from
// "set to the zero value", which is what per-key merging needs.
type fileConfig struct {
	Model    *string `yaml:"model"`
	Mode     *string `yaml:"mode"`
	Store    *string `yaml:"store"`
	MaxTurns *int    `yaml:"max_turns"`
	// NodeRunner and ClaudePath: see Config.
	NodeRunner *string `yaml:"node_runner"`
	ClaudePath *string `yaml:"claude_path"`
	// The interaction timeouts, as Go durations ("10m").
	QuestionTimeout *time.Duration          `yaml:"question_timeout"`
	ApprovalTimeout *time.Duration          `yaml:"approval_timeout"`
	Providers       map[string]fileProvider `yaml:"providers"`
	Pools           map[string][]string     `yaml:"pools"`
	NodeModels      map[string]string       `yaml:"node_models"`
	Compaction      fileCompaction          `yaml:"compaction"`
	Retry           fileRetry               `yaml:"retry"`
	Headless        fileHeadless            `yaml:"headless"`
	MCPServers      map[string]MCPServer    `yaml:"mcp_servers"`
	Sandbox         fileSandbox             `yaml:"sandbox"`
	Cluster         fileCluster             `yaml:"cluster"`
	Telemetry       fileTelemetry           `yaml:"telemetry"`
}

type fileProvider struct {
	Type      *string              `yaml:"type"`
	BaseURL   *string              `yaml:"base_url"`
	APIKeyEnv *string              `yaml:"api_key_env"`
	APIKey    *string              `yaml:"api_key"`
	Models    map[string]fileModel `yaml:"models"`
}

type fileModel struct {
	// Price replaces the lower layer's price as a whole.
	Price         *llm.Price `yaml:"price"`
	ContextWindow *int64     `yaml:"context_window"`
	MaxOutput     *int64     `yaml:"max_output"`
	Images        *bool      `yaml:"images"`
}

type fileCompaction struct {
	Threshold  *float64 `yaml:"threshold"`
	KeepRecent *int     `yaml:"keep_recent"`
}

type fileRetry struct {
	MaxAttempts  *int           `yaml:"max_attempts"`
	StallTimeout *time.Duration `yaml:"stall_timeout"`
}

type fileHeadless struct {
	QueueLimit *int `yaml:"queue_limit"`
}

type fileCluster struct {
	LeaseTTL  *time.Duration `yaml:"lease_ttl"`
	Heartbeat *time.Duration `yaml:"heartbeat"`
	Poll      *time.Duration `yaml:"poll"`
}

// UserConfigFile is $XDG_CONFIG_HOME/arbor/config.yaml; "" when no config
// home is known.
func (c *Config) UserConfigFile() string { return c.inConfigHome("config.yaml") }

// ProjectConfigFile is <workspace>/.arbor/config.yaml; "" without a
// workspace.
func (c *Config) ProjectConfigFile() string { return c.inWorkspace("config.yaml") }

// readFile decodes one config file. A missing file yields (nil, nil, nil);
// an empty one an empty layer.
func readFile(path string) (*fileConfig, fs.FileInfo, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading config file: %w", err)
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading config file: %w", err)
	}

	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, nil, &FileError{Path: path, Err: err}
	}
	if len(root.Content) == 0 {
		return &fileConfig{}, info, nil
	}
	if err := checkKeys(root.Content[0], reflect.TypeOf(fileConfig{}), ""); err != nil {
		err.Path = path
		return nil, nil, err
	}

	// The checked tree is decoded, not the bytes again: the check has read
	// every key (an unknown one never reaches here) and has made a bare 0
	// a duration (checkDuration).
	var fc fileConfig
	if err := root.Decode(&fc); err != nil {
		return nil, nil, &FileError{Path: path, Err: err}
	}
	return &fc, info, nil
}

// checkKeys walks a YAML node against the Go type it will decode into and
// reports the first mapping key that type does not have, or the first
// duration that is not one (checkDuration).
func checkKeys(n *yaml.Node, t reflect.Type, path string) *FileError {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode {
		return checkKeys(n.Alias, t, path)
	}
	if t == durationType {
		return checkDuration(n, path)
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return nil // a type error; the decoder reports it with its line
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "<<" { // YAML merge key: its mappings hold our keys
				if err := checkMerge(v, t, path); err != nil {
					return err
				}
				continue
			}
			ft, ok := fields[k.Value]
			if !ok {
				return &FileError{Line: k.Line, Key: join(path, k.Value), Err: ErrUnknownKey}
			}
			if err := checkKeys(v, ft, join(path, k.Value)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := checkKeys(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return nil
		}
		for i, v := range n.Content {
			if err := checkKeys(v, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

var durationType = reflect.TypeOf(time.Duration(0))

// checkDuration refuses what the decoder would refuse for a duration with
// its own words ("cannot unmarshal !!int `60` into time.Duration"), saying
// what to write: a string time.ParseDuration reads, with its unit. A bare
// 0 needs no unit (ParseDuration reads it too) and is made a string for
// the decoder, so question_timeout: 0 means none, as 0s does.
func checkDuration(n *yaml.Node, path string) *FileError {
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		return nil // not a scalar: the decoder reports it with its line
	}
	if n.ShortTag() == "!!int" && n.Value == "0" {
		n.Tag = "!!str"
		return nil
	}
	if _, err := time.ParseDuration(n.Value); err == nil && n.ShortTag() == "!!str" {
		return nil
	}
	example := "60s, 2m or 1h30m"
	if _, err := strconv.ParseFloat(n.Value, 64); err == nil {
		example = n.Value + "s"
	}
	return &FileError{Line: n.Line, Err: fmt.Errorf("%s: %q is not a duration: write one with its unit, such as %s", path, n.Value, example)}
}

func checkMerge(v *yaml.Node, t reflect.Type, path string) *FileError {
	if v.Kind == yaml.SequenceNode {
		for _, m := range v.Content {
			if err := checkKeys(m, t, path); err != nil {
				return err
			}
		}
		return nil
	}
	return checkKeys(v, t, path)
}

// yamlFields maps a struct's YAML keys to their field types.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	fields := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = f.Type
	}
	return fields
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// apply merges one file layer into c, recording src as the source of every
// value it sets.
func (c *Config) apply(fc *fileConfig, src string) {
	set(c, &c.Model, fc.Model, "model", src)
	set(c, &c.Mode, fc.Mode, "mode", src)
	set(c, &c.Store, fc.Store, "store", src)
	set(c, &c.MaxTurns, fc.MaxTurns, "max_turns", src)
	set(c, &c.NodeRunner, fc.NodeRunner, "node_runner", src)
	set(c, &c.ClaudePath, fc.ClaudePath, "claude_path", src)
	set(c, &c.QuestionTimeout, fc.QuestionTimeout, "question_timeout", src)
	set(c, &c.ApprovalTimeout, fc.ApprovalTimeout, "approval_timeout", src)
	set(c, &c.Compaction.Threshold, fc.Compaction.Threshold, "compaction.threshold", src)
	set(c, &c.Compaction.KeepRecent, fc.Compaction.KeepRecent, "compaction.keep_recent", src)
	set(c, &c.Retry.MaxAttempts, fc.Retry.MaxAttempts, "retry.max_attempts", src)
	set(c, &c.Retry.StallTimeout, fc.Retry.StallTimeout, "retry.stall_timeout", src)
	set(c, &c.Headless.QueueLimit, fc.Headless.QueueLimit, "headless.queue_limit", src)
	set(c, &c.Cluster.LeaseTTL, fc.Cluster.LeaseTTL, "cluster.lease_ttl", src)
	set(c, &c.Cluster.Heartbeat, fc.Cluster.Heartbeat, "cluster.heartbeat", src)
	set(c, &c.Cluster.Poll, fc.Cluster.Poll, "cluster.poll", src)

	c.addMCPServers(fc.MCPServers, src)
	c.applySandbox(fc.Sandbox, src)
	c.applyTelemetry(fc.Telemetry, src)
	for name, ref := range fc.NodeModels {
		if c.NodeModels == nil {
			c.NodeModels = map[string]string{}
		}
		c.NodeModels[name] = ref
		c.sources["node_models."+name] = src
	}
	for name, refs := range fc.Pools {
		c.Pools[name] = append([]string(nil), refs...)
		c.sources["pools."+name] = src
	}
	for name, fp := range fc.Providers {
		field := "providers." + name
		c.sources[field] = src
		p := c.Providers[name]
		set(c, &p.Type, fp.Type, field+".type", src)
		set(c, &p.BaseURL, fp.BaseURL, field+".base_url", src)
		set(c, &p.APIKeyEnv, fp.APIKeyEnv, field+".api_key_env", src)
		set(c, &p.APIKey, fp.APIKey, field+".api_key", src)
		if p.Models == nil {
			p.Models = map[string]Model{}
		}
		for mname, fm := range fp.Models {
			mfield := field + ".models." + mname
			c.sources[mfield] = src
			m := p.Models[mname]
			if fm.Price != nil {
				pr := *fm.Price
				m.Price = &pr
				c.sources[mfield+".price"] = src
			}
			set(c, &m.ContextWindow, fm.ContextWindow, mfield+".context_window", src)
			set(c, &m.MaxOutput, fm.MaxOutput, mfield+".max_output", src)
			if fm.Images != nil {
				v := *fm.Images
				m.Images = &v
				c.sources[mfield+".images"] = src
			}
			p.Models[mname] = m
		}
		c.Providers[name] = p
	}
}

func set[T any](c *Config, dst *T, v *T, field, src string) {
	if v == nil {
		return
	}
	*dst = *v
	c.sources[field] = src
}
