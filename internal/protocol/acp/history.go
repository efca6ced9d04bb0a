// session/list: the stored conversations an editor may resume.

package acp

import (
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/arbor-run/arbor/internal/store"
)

// listPage is how many sessions one session/list answer holds at most.
const listPage = 50

// listSessions answers session/list: the conversations of cwd (every
// workspace's without it) that session/load or session/resume can open,
// the one written to last first, a page at a time. A tree node's session
// is not one. The cursor names the last session of the previous page.
func (s *Server) listSessions(m message) (any, *rpcError) {
	var p listSessionsRequest
	if e := params(m, &p); e != nil {
		return nil, e
	}
	q := store.ConversationQuery{Limit: listPage + 1}
	if p.Cwd != "" {
		if !filepath.IsAbs(p.Cwd) {
			return nil, &rpcError{Code: codeInvalidParams, Message: "session/list: cwd " + strconv.Quote(p.Cwd) + " is not an absolute path"}
		}
		q.Workspace = filepath.Clean(p.Cwd)
	}
	if p.Cursor != "" {
		at, id, ok := parseCursor(p.Cursor)
		if !ok {
			return nil, &rpcError{Code: codeInvalidParams, Message: "session/list: cursor " + strconv.Quote(p.Cursor) + " is not one arbor gave"}
		}
		q.AfterUpdated, q.AfterID = at, id
	}
	found, err := s.app.Store.Conversations(s.ctx, q)
	if err != nil {
		return nil, &rpcError{Code: codeInternalError, Message: "session/list: " + err.Error()}
	}
	out := listSessionsResponse{Sessions: []sessionInfo{}}
	for i, c := range found {
		if i == listPage {
			last := found[i-1]
			out.NextCursor = strconv.FormatInt(last.UpdatedAt.UnixNano(), 10) + "/" + last.ID
			break
		}
		if !filepath.IsAbs(c.Workspace) {
			continue // ACP names a session's cwd by an absolute path
		}
		out.Sessions = append(out.Sessions, sessionInfo{SessionID: c.ID, Cwd: c.Workspace, Title: c.Title, UpdatedAt: c.UpdatedAt.UTC().Format(time.RFC3339Nano)})
	}
	return out, nil
}

// parseCursor reads a cursor of listSessions: the last write of the
// previous page's last session, in Unix nanoseconds, and its id.
func parseCursor(c string) (time.Time, string, bool) {
	ns, id, ok := strings.Cut(c, "/")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || id == "" {
		return time.Time{}, "", false
	}
	return time.Unix(0, n).UTC(), id, true
}
