// Command sessions measures many `arbor headless` sessions on one
// machine, as a gateway that runs one arbor process per chat would: N
// processes against one scripted model server (internal/llm/llmtest,
// served by this driver, so the model costs the same for every session
// and its CPU is the driver's, not arbor's). bench/sessions.sh builds
// arbor and this driver, raises the limits N processes need and runs it.
//
// It prints, in order:
//   - the time from the first process start to the last ready line
//     (starting -parallel processes at a time), and what a start cost a
//     session to its ready line: CPU, minor page faults and context
//     switches of all its threads;
//   - memory per session from /proc/PID/smaps_rollup: Pss (the shared
//     pages of the binary divided among the sessions mapping them) and
//     private (Private_Clean + Private_Dirty, what a session alone holds),
//     median and total, at ready, -settle after ready and -settle after
//     the turns (a session gives memory back a second after it goes idle);
//   - the CPU the idle sessions used over -idle (utime + stime from
//     /proc/PID/stat), as a share of one core per session;
//   - send→idle with all N sessions sending at once, -rounds times: p50,
//     p99 and worst over every turn, and how many turns were not answered
//     (an idle whose last_outcome is not "completed", an error envelope,
//     or a process that died), and the CPU, page faults and context
//     switches the sessions used per turn.
//
// By default every session shares one HOME and XDG state directory (one
// SQLite store, as sessions of one user would); -separate gives each its
// own.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/arbor-run/arbor/bench/internal/headless"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

func main() {
	o := options{}
	flag.StringVar(&o.bin, "arbor", "", "the arbor binary (required)")
	flag.StringVar(&o.dir, "dir", "", "scratch directory for state and workspaces (required)")
	flag.IntVar(&o.n, "n", 10, "sessions")
	flag.IntVar(&o.parallel, "parallel", 8, "processes started at a time")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds of all sessions sending at once")
	flag.DurationVar(&o.idle, "idle", 10*time.Second, "window over which idle CPU is measured")
	flag.DurationVar(&o.settle, "settle", 2*time.Second, "wait after ready and after the last round before reading memory again")
	flag.BoolVar(&o.separate, "separate", false, "give every session its own HOME and state directory")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "sessions bench:", err)
		os.Exit(1)
	}
}

type options struct {
	bin, dir            string
	n, parallel, rounds int
	idle, settle        time.Duration
	separate            bool
}

func run(o options) error {
	if o.bin == "" || o.dir == "" || o.n < 1 || o.parallel < 1 {
		return errors.New("-arbor and -dir are required, -n and -parallel must be positive")
	}
	srv := llmtest.NewServerFunc(func(llmtest.Request) llmtest.Turn {
		return llmtest.Turn{Text: "A reply, short and instant."}
	})
	defer srv.Close()
	env := append(os.Environ(), "ANTHROPIC_BASE_URL="+srv.URL, "ANTHROPIC_API_KEY=sk-bench")

	sessions := make([]*session, o.n)
	defer func() {
		for _, s := range sessions {
			if s != nil {
				s.Kill()
			}
		}
	}()
	t0 := time.Now()
	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	slots := make(chan struct{}, o.parallel)
	for i := range o.n {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			s, err := start(o, i, env)
			errMu.Lock()
			defer errMu.Unlock()
			sessions[i] = s
			if err != nil && first == nil {
				first = fmt.Errorf("session %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	readyAll := time.Since(t0)
	readies := make([]time.Duration, o.n)
	for i, s := range sessions {
		readies[i] = s.Ready
	}
	fmt.Printf("%d arbor headless sessions, one scripted model server, %d started at a time, state %s\n",
		o.n, o.parallel, map[bool]string{false: "shared (one store)", true: "separate"}[o.separate])
	fmt.Printf("all ready: %.2f s (a process's own start → ready: median %s, p99 %s)\n",
		readyAll.Seconds(), ms(headless.Quantile(readies, 0.5)), ms(headless.Quantile(readies, 0.99)))
	started, err := usageOf(sessions)
	if err != nil {
		return err
	}
	fmt.Printf("a start to ready, per session: %s\n", started.per(o.n))
	if err := printMemory("at ready", sessions); err != nil {
		return err
	}
	// A session gives memory back once, a second after ready with no
	// input (protocol.QuietAfter); the idle window starts after that.
	time.Sleep(o.settle)
	if err := printMemory(fmt.Sprintf("%s after ready", o.settle), sessions); err != nil {
		return err
	}

	idle0, err := usageOf(sessions)
	if err != nil {
		return err
	}
	time.Sleep(o.idle)
	idle1, err := usageOf(sessions)
	if err != nil {
		return err
	}
	used := float64(idle1.minus(idle0).ticks) / 100
	fmt.Printf("idle: %.2f s of CPU over %s by all sessions: %.4f %% of a core per session\n",
		used, o.idle, 100*used/o.idle.Seconds()/float64(o.n))

	var lat []time.Duration
	failed := 0
	turns0, err := usageOf(sessions)
	if err != nil {
		return err
	}
	for r := range o.rounds {
		res := make([]turn, o.n)
		var wg sync.WaitGroup
		for i, s := range sessions {
			wg.Go(func() { res[i] = s.turn(fmt.Sprintf("Round %d: answer briefly.", r+1)) })
		}
		wg.Wait()
		for _, t := range res {
			if t.err != nil {
				failed++
				if failed <= 3 {
					fmt.Fprintln(os.Stderr, "unanswered:", t.err)
				}
				continue
			}
			lat = append(lat, t.lat)
		}
	}
	if len(lat) == 0 {
		return fmt.Errorf("no turn of %d was answered", o.n*o.rounds)
	}
	turns1, err := usageOf(sessions)
	if err != nil {
		return err
	}
	fmt.Printf("send→idle, all %d sending at once, %d rounds: p50 %s, p99 %s, worst %s; %d of %d turns answered\n",
		o.n, o.rounds, ms(headless.Quantile(lat, 0.5)), ms(headless.Quantile(lat, 0.99)), ms(slices.Max(lat)), len(lat), o.n*o.rounds)
	fmt.Printf("CPU of the arbor processes during the rounds: %.2f s; per turn %s\n",
		float64(turns1.minus(turns0).ticks)/100, turns1.minus(turns0).per(o.n*o.rounds))
	time.Sleep(o.settle)
	if err := printMemory(fmt.Sprintf("%s after the turns", o.settle), sessions); err != nil {
		return err
	}
	for i, s := range sessions {
		if err := s.Stop(); err != nil {
			return fmt.Errorf("session %d: %w", i, err)
		}
		sessions[i] = nil
	}
	if failed > 0 {
		return fmt.Errorf("%d turns were not answered", failed)
	}
	return nil
}

// session is one running `arbor headless`.
type session struct{ *headless.Proc }

// start launches session i and waits for its ready line.
func start(o options, i int, env []string) (*session, error) {
	root := filepath.Join(o.dir, "shared")
	if o.separate {
		root = filepath.Join(o.dir, "s"+strconv.Itoa(i))
	}
	ws := filepath.Join(o.dir, "ws", strconv.Itoa(i))
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return nil, err
	}
	p, err := headless.Start([]string{o.bin, "headless", "--model", "anthropic/claude-sonnet-4-5"}, ws, root, env)
	if err != nil {
		return nil, err
	}
	return &session{p}, nil
}

type turn struct {
	lat time.Duration
	err error
}

// turn sends one message and waits for its idle envelope.
func (s *session) turn(msg string) turn {
	line, err := json.Marshal(map[string]string{"type": "send", "content": msg})
	if err != nil {
		return turn{err: err}
	}
	t0 := time.Now()
	if _, err := s.In.Write(append(line, '\n')); err != nil {
		return turn{err: fmt.Errorf("pid %d: %w; stderr: %s", s.Cmd.Process.Pid, err, s.Stderr)}
	}
	for {
		typ, payload, err := s.Next()
		if err != nil {
			return turn{err: fmt.Errorf("pid %d: %w; stderr: %s", s.Cmd.Process.Pid, err, s.Stderr)}
		}
		switch typ {
		case "error":
			return turn{err: fmt.Errorf("pid %d: error envelope %s", s.Cmd.Process.Pid, payload)}
		case "idle":
			var idle struct {
				LastOutcome string `json:"last_outcome"`
			}
			if err := json.Unmarshal(payload, &idle); err != nil || idle.LastOutcome != "completed" {
				return turn{err: fmt.Errorf("pid %d: idle %s", s.Cmd.Process.Pid, payload)}
			}
			return turn{lat: time.Since(t0)}
		}
	}
}

// printMemory prints the median and total Pss and private memory of the
// sessions, from /proc/PID/smaps_rollup (KiB).
func printMemory(when string, sessions []*session) error {
	var pss, priv, anon, rss []int
	for _, s := range sessions {
		m, err := rollup(s.Cmd.Process.Pid)
		if err != nil {
			return err
		}
		pss, priv, rss = append(pss, m["Pss"]), append(priv, m["Private_Clean"]+m["Private_Dirty"]), append(rss, m["Rss"])
		anon = append(anon, m["Anonymous"])
	}
	sum := func(v []int) float64 {
		t := 0
		for _, x := range v {
			t += x
		}
		return float64(t) / 1048576
	}
	fmt.Printf("memory %s, per session (median): PSS %.2f MiB, private %.2f MiB (anonymous %.2f), RSS %.1f MiB; all sessions: PSS %.2f GiB, private %.2f GiB\n",
		when, mb(headless.Quantile(pss, 0.5)), mb(headless.Quantile(priv, 0.5)), mb(headless.Quantile(anon, 0.5)), mb(headless.Quantile(rss, 0.5)), sum(pss), sum(priv))
	return nil
}

// rollup reads /proc/PID/smaps_rollup into a map of KiB by field name.
func rollup(pid int) (map[string]int, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return nil, err
	}
	m := map[string]int{}
	for l := range strings.Lines(string(data)) {
		f := strings.Fields(l)
		if len(f) == 3 && f[2] == "kB" {
			v, err := strconv.Atoi(f[1])
			if err != nil {
				return nil, fmt.Errorf("smaps_rollup of %d: %q: %w", pid, l, err)
			}
			m[strings.TrimSuffix(f[0], ":")] = v
		}
	}
	return m, nil
}

// usage is what the sessions' processes used, summed over all of them:
// CPU in clock ticks (utime + stime, fields 14 and 15 of /proc/PID/stat),
// minor page faults (field 10) and context switches of every thread
// (/proc/PID/task/*/status), voluntary (a thread waited) and not (the
// kernel took the core from it).
type usage struct{ ticks, faults, waits, preempts int }

func (u usage) minus(v usage) usage {
	return usage{u.ticks - v.ticks, u.faults - v.faults, u.waits - v.waits, u.preempts - v.preempts}
}

// per reports u over n events (starts or turns): ms of CPU, page faults
// and context switches. Clock ticks are 1/100 s on Linux (USER_HZ).
func (u usage) per(n int) string {
	f := float64(n)
	return fmt.Sprintf("%.1f ms of CPU, %.0f page faults, %.0f context switches (%.0f waits, %.0f preemptions)",
		float64(u.ticks)*10/f, float64(u.faults)/f, float64(u.waits+u.preempts)/f, float64(u.waits)/f, float64(u.preempts)/f)
}

func usageOf(sessions []*session) (usage, error) {
	var u usage
	for _, s := range sessions {
		pid := s.Cmd.Process.Pid
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return u, err
		}
		// The command name (field 2) may hold spaces; count from after it.
		f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		if len(f) < 13 {
			return u, fmt.Errorf("short /proc/%d/stat", pid)
		}
		minflt, err1 := strconv.Atoi(f[7])
		utime, err2 := strconv.Atoi(f[11])
		stime, err3 := strconv.Atoi(f[12])
		if err := errors.Join(err1, err2, err3); err != nil {
			return u, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		u.faults += minflt
		u.ticks += utime + stime
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
		if err != nil {
			return u, err
		}
		for _, t := range tasks {
			data, err := os.ReadFile(t)
			if err != nil {
				continue // the thread ended
			}
			for l := range strings.Lines(string(data)) {
				name, v, _ := strings.Cut(l, ":")
				var to *int
				switch name {
				case "voluntary_ctxt_switches":
					to = &u.waits
				case "nonvoluntary_ctxt_switches":
					to = &u.preempts
				default:
					continue
				}
				n, err := strconv.Atoi(strings.TrimSpace(v))
				if err != nil {
					return u, fmt.Errorf("%s: %q: %w", t, l, err)
				}
				*to += n
			}
		}
	}
	return u, nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func mb(kib int) float64 { return float64(kib) / 1024 }
