package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/llm"
)

// A project's hooks read the conversation from transcript_path, a JSONL
// file in Claude Code's shape: a line per message, "type" user or
// assistant, "message" {role, content} with the API's content blocks.
// arbor keeps its sessions in its store, so for a session whose project
// declares hooks it writes such a file, under the state directory, from
// the agent's context as a hook is about to run: what the model sees
// then, the assistant message whose tool call a PreToolUse hook guards
// included. New messages are appended; after a compaction the file is
// written again from the summary on. Sessions without hooks write none.

// transcripts are the files of the sessions that have hooks.
type transcripts struct {
	dir   string
	mu    sync.Mutex // guards files
	files map[string]*transcript
}

// transcript is one session's file and how far it is written.
type transcript struct {
	mu     sync.Mutex // held while the file is brought up to date
	path   string
	agent  weak.Pointer[agent.Agent] // nil until the session's agent exists
	n      int                       // messages of the context written
	first  string                    // the written context's first message, as a line's message
	parent string                    // the last line's uuid
}

// transcriptOf registers session id's agent for its hooks' transcript.
func (a *App) transcriptOf(id string, ag *agent.Agent) {
	t := a.rootApp().transcripts.get(id)
	t.mu.Lock()
	t.agent = weak.Make(ag)
	t.mu.Unlock()
}

// TranscriptPath brings session id's transcript up to date and returns
// its path (a hook's transcript_path); "" when the session has no agent in this process, or the
// file cannot be written (said once on stderr).
func (a *App) TranscriptPath(id string) string {
	if id == "" {
		return ""
	}
	t := a.rootApp().transcripts.lookup(id)
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	ag := t.agent.Value()
	if ag == nil {
		return ""
	}
	if err := t.sync(id, a.Workspace, ag.History()); err != nil {
		a.warnOnce(fmt.Sprintf("the transcript of session %s for its hooks: %v", id, err))
		return ""
	}
	return t.path
}

// get returns session id's transcript, made on first use.
func (ts *transcripts) get(id string) *transcript {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.files == nil {
		ts.files = map[string]*transcript{}
	}
	t := ts.files[id]
	if t == nil {
		name := strings.NewReplacer("/", "_", string(filepath.Separator), "_").Replace(id) + ".jsonl"
		t = &transcript{path: filepath.Join(ts.dir, name)}
		ts.files[id] = t
	}
	return t
}

// lookup returns session id's transcript, nil when its agent was never
// registered.
func (ts *transcripts) lookup(id string) *transcript {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.files[id]
}

// transcriptsDir is where the transcripts are written.
func transcriptsDir(getenv func(string) string) string {
	return filepath.Join(config.StateHome(getenv), "arbor", "transcripts")
}

// sync writes the messages of history the file lacks: those past n, or
// all of them when the context no longer starts as written (a
// compaction), or when the file is written first in this process.
func (t *transcript) sync(id, cwd string, history []llm.Message) error {
	if len(history) == 0 {
		return nil
	}
	first, err := json.Marshal(apiMessage(history[0]))
	if err != nil {
		return err
	}
	flag := os.O_WRONLY | os.O_CREATE | os.O_APPEND
	if t.n == 0 || len(history) < t.n || string(first) != t.first {
		t.n, t.parent, t.first = 0, "", string(first)
		flag |= os.O_TRUNC
	}
	if t.n == len(history) {
		return nil
	}
	var buf bytes.Buffer
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	for i := t.n; i < len(history); i++ {
		uuid := fmt.Sprintf("%s-%d", id, i)
		var parent any
		if t.parent != "" {
			parent = t.parent
		}
		line, err := json.Marshal(map[string]any{
			"parentUuid": parent, "isSidechain": false, "type": string(history[i].Role),
			"message": apiMessage(history[i]), "uuid": uuid, "timestamp": now, "sessionId": id, "cwd": cwd,
		})
		if err != nil {
			return err
		}
		buf.Write(line)
		buf.WriteByte('\n')
		t.parent = uuid
	}
	if err := os.MkdirAll(filepath.Dir(t.path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(t.path, flag, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(buf.Bytes())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.n = 0 // written again from the start next time
		return err
	}
	t.n = len(history)
	return nil
}

// apiMessage is m as the Messages API writes it: role and content blocks.
func apiMessage(m llm.Message) map[string]any {
	blocks := []map[string]any{}
	image := func(img llm.Image) map[string]any {
		return map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": img.MediaType, "data": img.Data}}
	}
	for _, p := range m.Parts {
		switch {
		case p.Type == llm.PartText && p.Text != "":
			blocks = append(blocks, map[string]any{"type": "text", "text": p.Text})
		case p.Type == llm.PartThinking:
			blocks = append(blocks, map[string]any{"type": "thinking", "thinking": p.Text, "signature": p.Signature})
		case p.Type == llm.PartToolCall && p.ToolCall != nil:
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": p.ToolCall.ID, "name": p.ToolCall.Name, "input": p.ToolCall.Input})
		case p.Type == llm.PartToolResult && p.ToolResult != nil:
			r := p.ToolResult
			var content any = r.Content
			if len(r.Images) > 0 {
				parts := []map[string]any{{"type": "text", "text": r.Content}}
				for _, img := range r.Images {
					parts = append(parts, image(img))
				}
				content = parts
			}
			blocks = append(blocks, map[string]any{"type": "tool_result", "tool_use_id": r.CallID, "content": content, "is_error": r.IsError})
		case p.Type == llm.PartImage && p.Image != nil:
			blocks = append(blocks, image(*p.Image))
		}
	}
	return map[string]any{"role": string(m.Role), "content": blocks}
}
