package dialect

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/arbor-run/arbor/internal/protocol"
)

// launchInit is the initialize control request that a client starting
// the CLI with --await-initialize writes as its first line (the Claude
// Agent SDK does when it sends disallowedTools, MCP servers, settings or
// plugins there instead of in argv). Its launch fields apply as their
// flags would: disallowedTools as --disallowedTools, mcpServers as
// --mcp-config, settings as --settings (only the sandbox's); managed
// settings and plugins, whose flags arbor refuses, are refused too.
type launchInit struct {
	Type    string `json:"type"`
	Request struct {
		Subtype         string          `json:"subtype"`
		DisallowedTools []string        `json:"disallowedTools"`
		MCPServers      json.RawMessage `json:"mcpServers"`
		Settings        json.RawMessage `json:"settings"`
		ManagedSettings json.RawMessage `json:"managedSettings"`
		Plugins         json.RawMessage `json:"plugins"`
	} `json:"request"`
}

// errInitializeNotFirst: under --await-initialize the first line was not
// the initialize request (Claude Code's initialize_not_first).
var errInitializeNotFirst = errors.New("--await-initialize: the first input line is not the initialize control request")

// errNoInput: the input ended before its first line.
var errNoInput = errors.New("the input ended first")

// awaitInitialize reads in's first line, which must be the initialize
// request, and returns it with the input to serve: that line again, then
// the rest.
func awaitInitialize(in io.Reader) (launchInit, io.Reader, error) {
	line, rest, err := firstLine(in)
	if err != nil {
		return launchInit{}, nil, err
	}
	var li launchInit
	if err := json.Unmarshal(bytes.TrimSpace(line), &li); err != nil || li.Type != "control_request" || li.Request.Subtype != "initialize" {
		return launchInit{}, nil, errInitializeNotFirst
	}
	for name, v := range map[string]json.RawMessage{"managedSettings": li.Request.ManagedSettings, "plugins": li.Request.Plugins} {
		if hasJSONValue(v) {
			return launchInit{}, nil, fmt.Errorf("--await-initialize: the initialize request's %s are not supported by arbor, so refused rather than ignored", name)
		}
	}
	return li, rest, nil
}

// firstLine reads in's first line and returns it with the input to
// serve: that line again, then the rest.
func firstLine(in io.Reader) ([]byte, io.Reader, error) {
	br := bufio.NewReaderSize(in, 64*1024)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > protocol.MaxLine+1 { // +1: the newline
			return nil, nil, fmt.Errorf("%w: it is longer than %d bytes", errInitializeNotFirst, protocol.MaxLine)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && len(line) == 0 {
			return nil, nil, fmt.Errorf("%w: %w", errInitializeNotFirst, errNoInput)
		}
		break
	}
	return line, io.MultiReader(bytes.NewReader(line), br), nil
}

// hasJSONValue reports whether a field sets anything: not absent, null,
// [] or {}.
func hasJSONValue(v json.RawMessage) bool {
	switch string(bytes.TrimSpace(v)) {
	case "", "null", "[]", "{}":
		return false
	}
	return true
}
