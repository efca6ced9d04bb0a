package envelope_test

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// lineWriter writes whole command lines to a server's input from several
// goroutines, one line at a time.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *lineWriter) send(t *testing.T, line string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := io.WriteString(w.w, line+"\n"); err != nil {
		t.Error(err) // may run off the test goroutine
	}
}

// countType is the number of lines of type typ seen so far.
func (b *bundle) countType(typ string) int {
	n := 0
	for _, o := range b.All {
		if o.Type == typ {
			n++
		}
	}
	return n
}

// TestSeqUnderConcurrentPushesAndCommands fires status and local_shell
// commands from several goroutines in three waves, each while another
// source pushes: the first turn (its model request and confirm_request),
// the same turn streaming slowly after the approval, and a background
// job's result with the slow delivery turn it starts. Every seq'd line
// must have a larger seq than the one before it in stdout order, every
// status_response a seq, and every command its answer: nothing lost, nothing
// doubled. (TestSeqWithInterleavedCommands writes from one goroutine
// while one turn streams.)
func TestSeqUnderConcurrentPushesAndCommands(t *testing.T) {
	t.Parallel()
	const (
		job      = "read l < gate; echo job says $l"
		writers  = 4
		waves    = 3
		statuses = 40 // per writer and wave
		shells   = 4  // per writer and wave
	)
	slow := &llmtest.Fault{Kind: llmtest.FaultSlow, Delay: llmtest.Duration(500 * time.Microsecond)}
	streamed, delivered := strings.Repeat("word ", 300), strings.Repeat("result ", 200)
	srv := llmtest.NewServer(backgroundTurn(job),
		llmtest.Turn{Text: streamed, Fault: slow},
		llmtest.Turn{Text: delivered, Fault: slow, Expect: "job says hi"})
	defer srv.Close()
	b, _ := setup(t, srv)
	gate := b.mkfifo("gate")
	w := &lineWriter{w: b.Input()}

	wave := make([]chan struct{}, waves)
	for i := range wave {
		wave[i] = make(chan struct{})
	}
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for v, start := range wave {
				<-start
				for i := range statuses {
					w.send(t, `{"type":"status"}`)
					if i%(statuses/shells) == 0 {
						w.send(t, cmd(map[string]any{"type": "local_shell", "command": fmt.Sprintf("echo tok-%d-%d-%d", g, v, i)}))
					}
				}
			}
		})
	}

	w.send(t, sendText("start the job and talk"))
	close(wave[0]) // while the first model request runs and asks
	req := b.Next(typ("confirm_request"))
	if req.P.ToolName != "shell" {
		t.Fatalf("confirm_request %s", req.raw)
	}
	w.send(t, cmd(map[string]any{"type": "confirm", "request_id": req.P.RequestID, "action": "allow"}))
	close(wave[1]) // while the turn streams slowly
	if idle := b.Next(typ("idle")); idle.P.RunningJobs != 1 {
		t.Fatalf("idle while the job runs %s", idle.raw)
	}
	close(wave[2]) // while the job's result is pushed and delivered
	if err := os.WriteFile(gate, []byte("hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b.Next(typ("background_result"))
	if idle := b.Next(typ("idle")); idle.P.RunningJobs != 0 {
		t.Fatalf("idle after the delivery %s", idle.raw)
	}
	wg.Wait()
	for b.countType("status_response") < writers*waves*statuses || b.countType("local_shell_result") < writers*waves*shells {
		b.Next(func(out) bool { return true })
	}
	b.Close()
	b.checkSeq()

	if n := b.countType("status_response"); n != writers*waves*statuses {
		t.Fatalf("%d status_response, want %d", n, writers*waves*statuses)
	}
	tokens := map[string]int{}
	for _, o := range b.All {
		switch o.Type {
		case "local_shell_result":
			if o.P.Failed {
				t.Fatalf("local_shell failed: %s", o.raw)
			}
			tokens[strings.TrimSpace(o.P.Output)]++
		case "assistant_message":
			if o.P.Text != "" && o.P.Text != streamed && o.P.Text != delivered {
				t.Fatalf("assistant_message lost text: %.200s", o.raw)
			}
		}
	}
	for g := range writers {
		for v := range waves {
			for i := 0; i < statuses; i += statuses / shells {
				if tok := fmt.Sprintf("tok-%d-%d-%d", g, v, i); tokens[tok] != 1 {
					t.Fatalf("%s answered %d times", tok, tokens[tok])
				}
			}
		}
	}
	if len(tokens) != writers*waves*shells {
		t.Fatalf("unexpected local_shell outputs: %v", tokens)
	}
	for typ, want := range map[string]int{"idle": 2, "background_result": 1, "assistant_message": 3, "confirm_request": 1} {
		if n := b.countType(typ); n != want {
			t.Fatalf("%d %s, want %d", n, typ, want)
		}
	}
}
