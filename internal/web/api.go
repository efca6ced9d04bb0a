package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
)

// maxBody is the largest request body the API reads.
const maxBody = 1 << 20

// decode reads a JSON body of at most maxBody bytes into v, refusing
// unknown fields so that a misspelt one is an error, not ignored. A
// longer body is errTooLarge (413), not the JSON error its cut would
// cause.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return fmt.Errorf("%w: the API takes at most %d MiB", errTooLarge, maxBody>>20)
		}
		return fmt.Errorf("%w: body: %v", errBadRequest, err)
	}
	return nil
}

func nodeID(r *http.Request) (int64, error) {
	id, err := tree.ParseID(r.PathValue("node"))
	if err != nil {
		return 0, fmt.Errorf("%w: %v", errBadRequest, err)
	}
	return id, nil
}

func (s *Server) apiRuns(w http.ResponseWriter, r *http.Request) {
	limit := 100
	if q := r.URL.Query().Get("limit"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, fmt.Errorf("limit %q: want a number >= 0 (0 = all)", q))
			return
		}
		limit = n
	}
	runs, err := s.listRuns(r.Context(), limit)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	if st := r.URL.Query().Get("status"); st != "" {
		runs = filterRuns(runs, st, "")
	}
	writeJSON(w, http.StatusOK, runs)
}

// filterRuns keeps the runs with the given status ("" any) whose id or
// goal contains text ("" any).
func filterRuns(runs []RunSummary, status, text string) []RunSummary {
	out := runs[:0:0]
	text = strings.ToLower(text)
	for _, r := range runs {
		if status != "" && string(r.Status) != status {
			continue
		}
		if text != "" && !strings.Contains(strings.ToLower(r.Goal), text) && !strings.Contains(r.ID, text) {
			continue
		}
		out = append(out, r)
	}
	return out
}

func (s *Server) apiRun(w http.ResponseWriter, r *http.Request) {
	d, err := s.runDetail(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

func (s *Server) apiNode(w http.ResponseWriter, r *http.Request) {
	id, err := nodeID(r)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	d, err := s.nodeDetail(r.Context(), r.PathValue("id"), id)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

// Started is the reply of POST /api/runs.
type Started struct {
	ID string `json:"id"`
}

func (s *Server) apiStart(w http.ResponseWriter, r *http.Request) {
	var req NewRun
	if err := decode(w, r, &req); err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	switch {
	case strings.TrimSpace(req.Goal) == "":
		writeError(w, http.StatusBadRequest, errors.New("goal is empty"))
		return
	case req.BudgetUSD < 0 || req.MaxTokens < 0:
		writeError(w, http.StatusBadRequest, errors.New("budget_usd and max_tokens must not be negative (0 = no limit)"))
		return
	}
	id, err := s.o.Steer.Start(r.Context(), req)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	writeJSON(w, http.StatusCreated, Started{ID: id})
}

// Done is the reply of a steering action.
type Done struct {
	OK    bool           `json:"ok"`
	State tree.NodeState `json:"state,omitempty"`
}

func (s *Server) apiResume(w http.ResponseWriter, r *http.Request) {
	if err := s.o.Steer.Resume(r.Context(), r.PathValue("id")); err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	writeJSON(w, http.StatusAccepted, Done{OK: true})
}

// AnswerRequest answers an ask node.
type AnswerRequest struct {
	Answer string `json:"answer"`
}

func (s *Server) apiAnswer(w http.ResponseWriter, r *http.Request) {
	id, err := nodeID(r)
	var req AnswerRequest
	if err == nil {
		err = decode(w, r, &req)
	}
	if err == nil && strings.TrimSpace(req.Answer) == "" {
		err = fmt.Errorf("%w: answer is empty", errBadRequest)
	}
	if err == nil {
		err = s.o.Steer.Answer(r.Context(), r.PathValue("id"), id, req.Answer)
	}
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	writeJSON(w, http.StatusOK, Done{OK: true})
}

func (s *Server) apiControl(w http.ResponseWriter, r *http.Request) {
	id, err := nodeID(r)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	op := tree.Op(r.PathValue("op"))
	if op != tree.OpStop && op != tree.OpPause && op != tree.OpResume {
		writeError(w, http.StatusNotFound, fmt.Errorf("no action %q: want answer, stop, pause or resume", op))
		return
	}
	st, err := s.o.Steer.Control(r.Context(), r.PathValue("id"), id, op)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	writeJSON(w, http.StatusOK, Done{OK: true, State: st})
}

// Resolution resolves a pending interaction: an approval (Allow, with
// Always to allow calls like it for the rest of the session, Message
// with a denial) or a question (Answer).
type Resolution struct {
	Allow   *bool  `json:"allow,omitempty"`
	Always  bool   `json:"always,omitempty"`
	Message string `json:"message,omitempty"`
	Answer  string `json:"answer,omitempty"`
}

func (s *Server) apiResolve(w http.ResponseWriter, r *http.Request) {
	var req Resolution
	if err := decode(w, r, &req); err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	var resp agent.Response
	switch {
	case req.Allow != nil:
		ap := tool.Approval{Allow: *req.Allow, Message: req.Message}
		if ap.Allow && req.Always {
			ap.RememberScope = "session"
		}
		resp.Approval = &ap
	case req.Answer != "":
		resp.Answer = &tool.Answer{Text: req.Answer}
	default:
		writeError(w, http.StatusBadRequest, errors.New("give allow (true or false) for an approval, or answer for a question"))
		return
	}
	var err error
	if run := r.PathValue("id"); run != "" && s.o.Steer != nil {
		err = s.o.Steer.Resolve(r.Context(), run, r.PathValue("iid"), resp)
	} else {
		err = s.o.Interactions.Resolve(r.PathValue("iid"), resp)
	}
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	writeJSON(w, http.StatusOK, Done{OK: true})
}
