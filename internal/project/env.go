// The environment settings files give the commands of a session
// (Claude Code's "env"): its shell commands, background jobs, hooks and
// MCP servers get it; arbor's own process does not.

package project

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// settingsEnv is one settings file's env: name to value, as Claude Code
// sets them (literally, no $VAR expansion), with a number or a boolean
// as its text. A name or value no environment can hold, or a value that
// is null, an object or a list, is passed to bad and left out.
func settingsEnv(raw json.RawMessage, bad func(part string, err error)) map[string]string {
	var vals map[string]json.RawMessage
	if err := json.Unmarshal(raw, &vals); err != nil || vals == nil {
		bad("env", errors.New("not an object of variable names and values"))
		return nil
	}
	out := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(vals)) {
		v, err := envValue(vals[name])
		if err == nil && (name == "" || strings.ContainsAny(name, "=\x00")) {
			err = errors.New("not a variable name")
		}
		if err != nil {
			bad(fmt.Sprintf("env.%s", name), err)
			continue
		}
		out[name] = v
	}
	return out
}

// envValue is a value of env as the variable's text.
func envValue(raw json.RawMessage) (string, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case bool:
		s = strconv.FormatBool(x)
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return "", fmt.Errorf("%s is not a string, a number or a boolean", strings.TrimSpace(string(raw)))
	}
	if strings.ContainsRune(s, 0) {
		return "", errors.New("a value with a NUL byte")
	}
	return s, nil
}

// mergeEnv adds the variables of a file read after (broader than) the
// ones in into: a name already set keeps its value.
func mergeEnv(into map[string]string, file map[string]string) map[string]string {
	for k, v := range file {
		if _, ok := into[k]; ok {
			continue
		}
		if into == nil {
			into = map[string]string{}
		}
		into[k] = v
	}
	return into
}

// EnvList is k's Env as NAME=value entries, sorted by name: what a
// command's environment adds.
func (k *Knowledge) EnvList() []string {
	if len(k.Env) == 0 {
		return nil
	}
	out := make([]string, 0, len(k.Env))
	for _, name := range slices.Sorted(maps.Keys(k.Env)) {
		out = append(out, name+"="+k.Env[name])
	}
	return out
}
