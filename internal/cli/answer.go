package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tree"
)

// answerRequest and answerReply are the one-line JSON messages of the
// answer socket.
type answerRequest struct {
	Node   int64  `json:"node"`
	Answer string `json:"answer"`
	// Tool, when set, asks the owner to run tree tool Tool of node Node
	// with Args instead (arbor mcp --node, see mcp_node.go).
	Tool string          `json:"tool,omitempty"`
	Args json.RawMessage `json:"args,omitempty"`
}

type answerReply struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	// Content and IsError are a tool request's result.
	Content string `json:"content,omitempty"`
	IsError bool   `json:"is_error,omitempty"`
}

func newAnswerCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   `answer RUN '#N' "text"`,
		Short: "Answer the question of an ask node",
		Long: `Answer ask node #N of a run. If a process is driving the run, the answer goes
to it at once (through the answer socket its lease names) and the nodes
waiting on the answer start; otherwise it is stored and used when the run is
resumed. An owner that cannot be reached (another machine) is named, exit 1.`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := tree.ParseID(args[1])
			if err != nil {
				return usageError{err}
			}
			a, err := g.open(cmd.Context())
			if err != nil {
				return err
			}
			defer a.Close()
			socket := a.AnswerSocket(args[0])
			if l, err := a.Store.GetLease(cmd.Context(), store.RunLeaseKey(args[0])); err == nil && l.Addr != "" {
				socket = l.Addr
			}
			sent, err := sendAnswer(socket, answerRequest{Node: id, Answer: args[2]})
			if !sent {
				// No owner listens: store the answer (under the run's
				// lease, which fails naming a live owner).
				e := tree.New(tree.Options{Store: a.Store, Bus: a.Bus, Broker: a.Broker})
				err = e.Answer(cmd.Context(), args[0], id, args[2])
			}
			var held *store.LeaseHeldError
			if errors.As(err, &held) {
				return &exitError{code: ExitFailure, err: fmt.Errorf("%w; its answer socket %s cannot be reached from here", err, socket)}
			}
			if err != nil {
				return &exitError{code: ExitFailure, err: err}
			}
			how := "stored; it is used when the run resumes"
			if sent {
				how = "delivered to the running process"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "answered #%d of %s (%s)\n", id, args[0], how)
			return nil
		},
	}
}

// sendAnswer delivers req to the process driving the run. sent is false
// when no process listens (the caller then answers in the store).
func sendAnswer(socket string, req answerRequest) (sent bool, err error) {
	conn, err := net.Dial("unix", socket)
	if err != nil {
		return false, nil
	}
	defer conn.Close()
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return false, nil
	}
	var rep answerReply
	if err := json.NewDecoder(conn).Decode(&rep); err != nil {
		return true, fmt.Errorf("the running process did not confirm the answer: %w", err)
	}
	if !rep.OK {
		return true, errors.New(rep.Error)
	}
	return true, nil
}

// serveAnswers listens on the run's answer socket until stop is called.
// It must only be called by the run's owner (under its lease, see
// tree.DriveOptions.Serve): a socket file already there is then a dead
// or former owner's and is replaced. On stop the file is removed only if
// it is still this listener's, never a later owner's. Failing to listen is
// reported and otherwise ignored: answers then go through the store.
func serveAnswers(ctx context.Context, a *app.App, e *tree.Engine, runID string, diag io.Writer) (stop func()) {
	path := a.AnswerSocket(runID)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		fmt.Fprintf(diag, "arbor: answers from other shells disabled: %v\n", err)
		return func() {}
	}
	_ = os.Remove(path) // the socket of an owner that is gone
	ln, err := net.Listen("unix", path)
	if err != nil {
		fmt.Fprintf(diag, "arbor: answers from other shells disabled: %v\n", err)
		return func() {}
	}
	// Close must not unlink the path blindly: it may be a later owner's.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	mine, statErr := os.Stat(path)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { handleAnswer(ctx, e, runID, conn) })
		}
	})
	return func() {
		ln.Close()
		wg.Wait()
		if now, err := os.Stat(path); err == nil && statErr == nil && os.SameFile(mine, now) {
			_ = os.Remove(path)
		}
	}
}

func handleAnswer(ctx context.Context, e *tree.Engine, runID string, conn net.Conn) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second)) // a silent client cannot hold shutdown
	line, err := bufio.NewReader(io.LimitReader(conn, 1<<20)).ReadBytes('\n')
	rep := answerReply{OK: true}
	var req answerRequest
	if err == nil {
		err = json.Unmarshal(line, &req)
	}
	if err == nil && req.Tool != "" {
		rep = runNodeTool(ctx, e, runID, req)
		_ = json.NewEncoder(conn).Encode(rep)
		return
	}
	if err == nil {
		err = e.Answer(ctx, runID, req.Node, req.Answer)
	}
	if err != nil {
		rep = answerReply{Error: err.Error()}
	}
	_ = json.NewEncoder(conn).Encode(rep)
}
