package dialect

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strings"

	"github.com/arbor-run/arbor/internal/config"
)

// qwenServer is one entry of the Qwen Code SDK's mcpServers option (its
// MCPServerConfig), which it sends in its initialize request rather than
// in argv.
type qwenServer struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	Cwd     string            `json:"cwd"`
	URL     string            `json:"url"`     // SSE
	HTTPURL string            `json:"httpUrl"` // streamable HTTP
	Headers map[string]string `json:"headers"`
	// Description and VersionNegotiation describe the server; arbor
	// needs neither.
	Description        string `json:"description"`
	VersionNegotiation string `json:"versionNegotiation"`
}

// qwenServerKeys are the keys of a qwen server entry arbor reads; a value
// under any other (tcp, timeout, trust, includeTools, excludeTools,
// oauth, …) refuses the launch, naming it.
var qwenServerKeys = map[string]bool{
	"command": true, "args": true, "env": true, "cwd": true, "url": true, "httpUrl": true, "headers": true,
	"description": true, "versionNegotiation": true,
}

// qwenMCPServers reads the first input line, which the Qwen Code SDK makes
// its initialize request, for the external MCP servers it carries: arbor
// starts them at launch, as it does Claude Code's --mcp-config. It returns
// the input to serve (that line again, then the rest); a first line that
// is not an initialize request, or input that ended, is served as it is.
func qwenMCPServers(in io.Reader) (map[string]config.MCPServer, io.Reader, error) {
	line, rest, err := firstLine(in)
	if errors.Is(err, errNoInput) {
		return nil, bytes.NewReader(nil), nil
	}
	if err != nil {
		return nil, nil, err
	}
	var li struct {
		Type    string `json:"type"`
		Request struct {
			Subtype    string                     `json:"subtype"`
			MCPServers map[string]json.RawMessage `json:"mcpServers"`
		} `json:"request"`
	}
	if json.Unmarshal(bytes.TrimSpace(line), &li) != nil || li.Type != "control_request" || li.Request.Subtype != "initialize" || len(li.Request.MCPServers) == 0 {
		return nil, rest, nil
	}
	out := map[string]config.MCPServer{}
	for name, raw := range li.Request.MCPServers {
		var keys map[string]json.RawMessage
		var s qwenServer
		if err := json.Unmarshal(raw, &keys); err != nil {
			return nil, nil, refuse("mcpServers.%s (the SDK's mcpServers): not an object: %v", name, err)
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, nil, refuse("mcpServers.%s (the SDK's mcpServers): %v", name, err)
		}
		var bad []string
		for k, v := range keys {
			if !qwenServerKeys[k] && hasJSONValue(v) && string(bytes.TrimSpace(v)) != "false" {
				bad = append(bad, k)
			}
		}
		if len(bad) > 0 {
			sort.Strings(bad)
			return nil, nil, refuse("mcpServers.%s (the SDK's mcpServers): %s not supported by arbor, so refused rather than ignored", name, strings.Join(bad, ", "))
		}
		m := config.MCPServer{Command: s.Command, Args: s.Args, Env: s.Env, Cwd: s.Cwd, Headers: s.Headers}
		switch {
		case s.Command != "":
			m.Type = config.MCPStdio
		case s.HTTPURL != "":
			m.Type, m.URL = config.MCPHTTP, s.HTTPURL
		case s.URL != "":
			m.Type, m.URL = config.MCPSSE, s.URL
		default:
			return nil, nil, refuse("mcpServers.%s (the SDK's mcpServers): needs command, httpUrl or url", name)
		}
		out[name] = m
	}
	if len(out) == 0 {
		return nil, rest, nil
	}
	return out, rest, nil
}
