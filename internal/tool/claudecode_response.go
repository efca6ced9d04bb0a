package tool

import (
	"encoding/json"
	"net/http"
	"strings"
)

// ToClaudeCodeResponse is what a hook reads as the tool_response of a
// call of arbor's tool arbor that succeeded: Claude Code's object for
// the tools whose result carries a Detail (Bash's stdout, Write's and
// Edit's filePath and structuredPatch, Read's file, Glob's filenames,
// Grep's content, TodoWrite's oldTodos and newTodos, WebFetch's code and
// result), as Claude Code 2.1 gives them; an MCP tool's content blocks, as Claude Code passes them
// (its text in one text block, its images); the result's text, as a JSON
// string, for every other tool. input is the call's arguments, in arbor's
// names or Claude Code's (edit's are the same in both).
func ToClaudeCodeResponse(arbor string, input json.RawMessage, res Result) json.RawMessage {
	var v any = res.Content
	if strings.HasPrefix(arbor, "mcp__") {
		v = mcpContent(res)
	}
	if d := res.Detail; d != nil {
		switch {
		case d.Shell != nil && arbor == "shell":
			v = ccBash{Stdout: d.Shell.Output, BackgroundTaskID: d.Shell.BackgroundID, Interrupted: d.Shell.Interrupted}
		case d.File != nil && arbor == "write_file":
			v = ccWrite(d.File)
		case d.File != nil && arbor == "edit":
			v = ccEdit(d.File, input)
		case d.Read != nil && arbor == "read_file":
			r := d.Read
			v = ccRead{Type: "text", File: ccReadFile{FilePath: r.Path, Content: r.Text, NumLines: r.Lines, StartLine: r.Start, TotalLines: r.Total}}
		case d.Glob != nil && arbor == "glob":
			g := d.Glob
			v = ccGlob{Filenames: g.Files, DurationMs: g.Took.Milliseconds(), NumFiles: len(g.Files), Truncated: g.Truncated,
				TotalMatches: g.Total, CountIsComplete: true}
		case d.Grep != nil && arbor == "grep":
			v = ccGrep{Mode: "content", Filenames: []string{}, Content: d.Grep.Content, NumLines: d.Grep.Lines, TotalLines: d.Grep.Lines}
		case d.Todo != nil && arbor == "todo_write":
			v = ccTodoWrite{OldTodos: ccTodos(d.Todo.Old), NewTodos: ccTodos(d.Todo.New)}
		case d.Fetch != nil && arbor == "web_fetch":
			f := d.Fetch
			v = ccWebFetch{Bytes: f.Bytes, Code: f.Code, CodeText: http.StatusText(f.Code), Result: res.Content,
				DurationMs: f.Took.Milliseconds(), URL: f.URL}
		}
	}
	out, err := json.Marshal(v)
	if err != nil {
		out, _ = json.Marshal(res.Content)
	}
	return out
}

// ccBash is Claude Code's BashOutput; stderr is merged into stdout, as
// Claude Code's Bash merges it.
type ccBash struct {
	Stdout           string `json:"stdout"`
	Stderr           string `json:"stderr"`
	Interrupted      bool   `json:"interrupted"`
	IsImage          bool   `json:"isImage"`
	NoOutputExpected bool   `json:"noOutputExpected"`
	BackgroundTaskID string `json:"backgroundTaskId,omitempty"`
}

// ccWriteOutput is Claude Code's FileWriteOutput.
type ccWriteOutput struct {
	Type            string   `json:"type"` // create, update
	FilePath        string   `json:"filePath"`
	Content         string   `json:"content"`
	StructuredPatch []ccHunk `json:"structuredPatch"`
	OriginalFile    *string  `json:"originalFile"`
	UserModified    bool     `json:"userModified"`
}

func ccWrite(f *FileDetail) ccWriteOutput {
	out := ccWriteOutput{Type: "create", FilePath: f.Path, Content: f.After, StructuredPatch: []ccHunk{}}
	if f.Existed {
		before := f.Before
		out.Type, out.OriginalFile, out.StructuredPatch = "update", &before, structuredPatch(f.Before, f.After)
	}
	return out
}

// ccEditOutput is Claude Code's FileEditOutput.
type ccEditOutput struct {
	FilePath        string   `json:"filePath"`
	OldString       string   `json:"oldString"`
	NewString       string   `json:"newString"`
	OriginalFile    string   `json:"originalFile"`
	StructuredPatch []ccHunk `json:"structuredPatch"`
	UserModified    bool     `json:"userModified"`
	ReplaceAll      bool     `json:"replaceAll"`
}

// ccEdit is edit's change as Claude Code's Edit gives it; a call with
// edits (several replacements) names its first in oldString and
// newString, the patch shows them all.
func ccEdit(f *FileDetail, input json.RawMessage) ccEditOutput {
	var a editArgs
	_ = json.Unmarshal(input, &a)
	if len(a.Edits) > 0 {
		a.OldString, a.NewString, a.ReplaceAll = a.Edits[0].OldString, a.Edits[0].NewString, a.Edits[0].ReplaceAll
	}
	return ccEditOutput{FilePath: f.Path, OldString: a.OldString, NewString: a.NewString, OriginalFile: f.Before,
		StructuredPatch: structuredPatch(f.Before, f.After), ReplaceAll: a.ReplaceAll}
}

// ccRead is Claude Code's FileReadOutput of a text file.
type ccRead struct {
	Type string     `json:"type"` // text
	File ccReadFile `json:"file"`
}

type ccReadFile struct {
	FilePath   string `json:"filePath"`
	Content    string `json:"content"`
	NumLines   int    `json:"numLines"`
	StartLine  int    `json:"startLine"`
	TotalLines int    `json:"totalLines"`
}

// mcpBlock is a content block of an MCP tool's result.
type mcpBlock struct {
	Type     string `json:"type"` // text, image
	Text     string `json:"text,omitempty"`
	Data     string `json:"data,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
}

func mcpContent(res Result) []mcpBlock {
	blocks := []mcpBlock{}
	if res.Content != "" {
		blocks = append(blocks, mcpBlock{Type: "text", Text: res.Content})
	}
	for _, img := range res.Images {
		blocks = append(blocks, mcpBlock{Type: "image", Data: img.Data, MimeType: img.MediaType})
	}
	return blocks
}
