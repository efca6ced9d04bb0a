// Command envelope measures a built arbor binary serving the envelope
// headless protocol (`arbor headless`, spec 000) against arbor's scripted
// instant model (`--model script:FILE`). bench/envelope.sh builds both and
// runs it.
//
// It prints three figures: the time from process start to the first stdout
// line (`ready`) over -starts processes, each with fresh state and then
// each finding the state a start before them left; the time from writing
// a `send` line to reading its `idle` envelope over -turns turns in one
// process, with the CPU those turns used (all threads, from
// /proc/PID/task/*/schedstat: a figure that load moves less than time);
// and the resident memory (VmRSS, VmHWM, RssAnon from
// /proc/PID/status) after -rss-turns turns in another process, right after
// its last turn and again once it has been idle for -settle (what an idle
// session keeps; arbor gives memory back a moment after a turn ends).
//
// Every process gets its own fresh HOME, XDG_CONFIG_HOME, XDG_STATE_HOME and
// workspace under -dir, so the user's files are never read or written. The
// scripted model answers each request with the next turn of its script and
// fails once the script is exhausted, so the script holds one plain text
// turn per send of the longest run; a turn counts only if its idle says
// last_outcome "completed".
//
// With -other "CMD ARGS…" it also measures a second program that speaks
// the envelope protocol (an older arbor) side by side, and with -chord
// PATH the chord binary at PATH (`chord headless`, given a config.yaml in
// its fresh config home that names the scripted server): both run against
// one scripted model server started by this driver (every process gets
// ANTHROPIC_BASE_URL, OPENAI_BASE_URL and ARBOR_BENCH_MODEL_URL pointing at
// it, with placeholder keys), arbor with --model anthropic/claude-sonnet-4-5,
// their sessions alternate for -rounds rounds and then -starts starts
// (each in a fresh state dir, then -starts more in one state dir per
// program that an uncounted start created, as a gateway's later sessions
// find it), and ready (both ways), the CPU of a start in the existing
// state dir (read 300 ms after ready, stdin still open), the send→idle
// median, CPU per turn, VmRSS, RssAnon and the binary sizes are printed
// with their ratios.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/arbor-run/arbor/bench/internal/headless"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

func main() {
	bin := flag.String("arbor", "", "the arbor binary to measure (required)")
	dir := flag.String("dir", "", "scratch directory for the script, state and workspaces (required)")
	starts := flag.Int("starts", 20, "processes started to time ready")
	turns := flag.Int("turns", 20, "send→idle turns timed in one process")
	rssTurns := flag.Int("rss-turns", 100, "turns before reading the resident memory")
	other := flag.String("other", "", "a second envelope-protocol command (space-separated) to measure side by side")
	rounds := flag.Int("rounds", 3, "alternating sessions of each program with -other")
	chord := flag.String("chord", "", "a chord binary to measure side by side (as -other \"CHORD headless\", with a config for the scripted server)")
	flag.DurationVar(&settle, "settle", 2*time.Second, "how long a session stays idle after its last turn before its memory is read again")
	flag.StringVar(&floorBin, "floor", "", "a bench/floor binary: its starts are timed too, as the least this stack starts in")
	flag.Parse()
	isChord := *chord != ""
	if isChord {
		*other = *chord + " headless"
	}
	if *other != "" {
		if err := compare(*bin, *dir, strings.Fields(*other), isChord, *starts, *turns, *rounds); err != nil {
			fmt.Fprintln(os.Stderr, "envelope bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*bin, *dir, *starts, *turns, *rssTurns); err != nil {
		fmt.Fprintln(os.Stderr, "envelope bench:", err)
		os.Exit(1)
	}
}

func run(bin, dir string, starts, turns, rssTurns int) error {
	if bin == "" || dir == "" {
		return errors.New("-arbor and -dir are required")
	}
	script := filepath.Join(dir, "script.yaml")
	if err := writeScript(script, max(turns, rssTurns)); err != nil {
		return err
	}
	b := bench{bin: bin, dir: dir, script: script}

	var ready []time.Duration
	var readyRSS, readyAnon []int
	for range starts {
		p, err := b.start()
		if err != nil {
			return err
		}
		ready = append(ready, p.Ready)
		m, err := memoryOf(p)
		if err != nil {
			return err
		}
		readyRSS, readyAnon = append(readyRSS, m.rss), append(readyAnon, m.anon)
		if err := p.Stop(); err != nil {
			return err
		}
	}
	fmt.Printf("envelope protocol, scripted instant model (%d starts, %d + %d turns)\n", starts, turns, rssTurns)
	fmt.Printf("time to ready: median %s, p90 %s, worst %s (fresh state dir each; the first start includes a cold page cache)\n",
		ms(headless.Quantile(ready, 0.5)), ms(headless.Quantile(ready, 0.9)), ms(slices.Max(ready)))
	fmt.Printf("RSS at ready: median %.1f MiB, of which anonymous %.1f MiB (the rest is file-backed, mostly the binary's pages, shared by every arbor process)\n",
		mb(headless.Quantile(readyRSS, 0.5)), mb(headless.Quantile(readyAnon, 0.5)))

	// Later sessions of a gateway find the state its first one created:
	// the store exists and is migrated.
	ready = ready[:0]
	b.shared = filepath.Join(dir, "shared")
	for i := range starts + 1 {
		p, err := b.start()
		if err != nil {
			return err
		}
		if i > 0 { // the first start creates the state
			ready = append(ready, p.Ready)
		}
		if err := p.Stop(); err != nil {
			return err
		}
	}
	b.shared = ""
	fmt.Printf("time to ready, existing state: median %s, p90 %s, worst %s (one state dir, created by a start before these)\n",
		ms(headless.Quantile(ready, 0.5)), ms(headless.Quantile(ready, 0.9)), ms(slices.Max(ready)))
	if err := printFloor(dir, starts, 0); err != nil {
		return err
	}

	lat, cpu, m, idle, err := b.session(turns)
	if err != nil {
		return err
	}
	fmt.Printf("CPU per turn (all threads, /proc/PID/task/*/schedstat): %s\n", ms(cpu))
	fmt.Printf("send→idle, %d turns in one process: median %s, p90 %s, worst %s; then VmRSS %.1f MiB, VmHWM %.1f MiB, RssAnon %.1f MiB; after %s idle VmRSS %.1f MiB, RssAnon %.1f MiB\n",
		turns, ms(headless.Quantile(lat, 0.5)), ms(headless.Quantile(lat, 0.9)), ms(slices.Max(lat)), mb(m.rss), mb(m.hwm), mb(m.anon),
		settle, mb(idle.rss), mb(idle.anon))

	lat, _, m, idle, err = b.session(rssTurns)
	if err != nil {
		return err
	}
	tail := lat[max(0, len(lat)-20):]
	fmt.Printf("after %d turns in one process: VmRSS %.1f MiB, VmHWM %.1f MiB, RssAnon %.1f MiB; after %s idle VmRSS %.1f MiB, RssAnon %.1f MiB; send→idle of the last %d turns: median %s\n",
		rssTurns, mb(m.rss), mb(m.hwm), mb(m.anon), settle, mb(idle.rss), mb(idle.anon), len(tail), ms(headless.Quantile(tail, 0.5)))
	return nil
}

// writeScript writes a scripted-model file with n plain text turns.
func writeScript(path string, n int) error {
	var sb strings.Builder
	sb.WriteString("turns:\n")
	for i := range n {
		fmt.Fprintf(&sb, "  - text: Reply number %d, short and instant.\n", i+1)
	}
	return os.WriteFile(path, []byte(sb.String()), 0o644)
}

type bench struct {
	bin, dir, script string
	runs             int
	// shared, when set, is the directory every start uses instead of a
	// fresh one.
	shared string
	// argv, when set, is the whole command to start instead of arbor with
	// the script; env is added to every process's environment.
	argv []string
	env  []string
	// setup, when set, prepares a process's root directory before it
	// starts.
	setup func(root string) error
}

// compare measures arbor and other against one model server, alternating
// rounds of one session of turns turns each, then starts more processes of
// each (alternating) to time ready, and prints both programs' figures and
// their ratios: ready, send→idle median, VmRSS and RssAnon after turns
// turns, and the size of each binary. When chord is set, other is Chord:
// every Chord process gets a config.yaml and auth.yaml in its fresh
// config home that point its anthropic provider at the scripted server.
func compare(bin, dir string, other []string, chord bool, starts, turns, rounds int) error {
	if bin == "" || dir == "" {
		return errors.New("-arbor and -dir are required")
	}
	srv := llmtest.NewServerFunc(func(llmtest.Request) llmtest.Turn {
		return llmtest.Turn{Text: "A reply, short and instant."}
	})
	defer srv.Close()
	env := []string{"ANTHROPIC_BASE_URL=" + srv.URL, "ANTHROPIC_API_KEY=sk-bench",
		"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=sk-bench", "ARBOR_BENCH_MODEL_URL=" + srv.URL}
	programs := []*bench{
		{dir: dir, argv: []string{bin, "headless", "--model", "anthropic/claude-sonnet-4-5"}, env: env},
		{dir: filepath.Join(dir, "other"), argv: other, env: env},
	}
	if chord {
		programs[1].setup = func(root string) error { return chordConfig(root, srv.URL) }
	}
	type figures struct {
		ready, lat, cpu []time.Duration
		// warm: ready with a state dir an earlier start created (a
		// gateway's later sessions)
		warm []time.Duration
		// startCPU: a warm start's CPU until startSettle after its
		// ready line, stdin held open (a start whose stdin ends at once
		// stops while it is still starting)
		startCPU  []time.Duration
		rss, anon []int
		// after settle
		idleRSS, idleAnon []int
	}
	figs := make([]figures, len(programs))
	for range rounds {
		for i, b := range programs {
			lat, cpu, m, idle, err := b.session(turns)
			if err != nil {
				return fmt.Errorf("%s: %w", b.argv[0], err)
			}
			f := &figs[i]
			f.lat, f.rss, f.anon = append(f.lat, lat...), append(f.rss, m.rss), append(f.anon, m.anon)
			f.cpu = append(f.cpu, cpu)
			f.idleRSS, f.idleAnon = append(f.idleRSS, idle.rss), append(f.idleAnon, idle.anon)
		}
	}
	// timeStarts starts each program starts times, alternating, and adds
	// each start's ready to the slice of its figures that into names;
	// with cpu, also its CPU until startSettle after ready (startCPU).
	timeStarts := func(into func(*figures) *[]time.Duration, cpu bool) error {
		for range starts {
			for i, b := range programs {
				p, err := b.start()
				if err != nil {
					return fmt.Errorf("%s: %w", b.argv[0], err)
				}
				ready := into(&figs[i])
				*ready = append(*ready, p.Ready)
				if cpu {
					time.Sleep(startSettle)
					var c time.Duration
					c, err = p.CPU()
					figs[i].startCPU = append(figs[i].startCPU, c)
				}
				if stopErr := p.Stop(); err == nil {
					err = stopErr
				}
				if err != nil {
					return fmt.Errorf("%s: %w", b.argv[0], err)
				}
			}
		}
		return nil
	}
	if err := timeStarts(func(f *figures) *[]time.Duration { return &f.ready }, false); err != nil {
		return err
	}
	// A gateway's later sessions find the state its first one created:
	// each program gets one state dir, created by a start not counted.
	for _, b := range programs {
		b.shared = filepath.Join(b.dir, "shared")
		p, err := b.start()
		if err == nil {
			err = p.Stop()
		}
		if err != nil {
			return fmt.Errorf("%s: %w", b.argv[0], err)
		}
	}
	if err := timeStarts(func(f *figures) *[]time.Duration { return &f.warm }, true); err != nil {
		return err
	}
	var size [2]int64
	for i, b := range programs {
		path, err := exec.LookPath(b.argv[0])
		if err == nil {
			var fi os.FileInfo
			if fi, err = os.Stat(path); err == nil {
				size[i] = fi.Size()
			}
		}
		if err != nil {
			return fmt.Errorf("size of %s: %w", b.argv[0], err)
		}
	}
	name := "other"
	if chord {
		name = "chord"
	}
	a, o := figs[0], figs[1]
	fmt.Printf("arbor vs. %s (%s), one scripted model server: %d rounds × %d turns, %d starts each\n",
		name, strings.Join(other, " "), rounds, turns, starts)
	fmt.Printf("%-34s %12s %12s %8s\n", "figure (medians)", "arbor", name, "ratio")
	row := func(what string, x, y float64, unit string) {
		fmt.Printf("%-34s %9.2f %-2s %9.2f %-2s %8.2f\n", what, x, unit, y, unit, x/y)
	}
	msf := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	row("ready (start → first line)", msf(headless.Quantile(a.ready, 0.5)), msf(headless.Quantile(o.ready, 0.5)), "ms")
	row("ready, existing state", msf(headless.Quantile(a.warm, 0.5)), msf(headless.Quantile(o.warm, 0.5)), "ms")
	row(fmt.Sprintf("CPU of a start, to %s after ready", startSettle), msf(headless.Quantile(a.startCPU, 0.5)), msf(headless.Quantile(o.startCPU, 0.5)), "ms")
	row("send→idle", msf(headless.Quantile(a.lat, 0.5)), msf(headless.Quantile(o.lat, 0.5)), "ms")
	row("CPU per turn (all threads)", msf(headless.Quantile(a.cpu, 0.5)), msf(headless.Quantile(o.cpu, 0.5)), "ms")
	row(fmt.Sprintf("VmRSS after %d turns", turns), mb(headless.Quantile(a.rss, 0.5)), mb(headless.Quantile(o.rss, 0.5)), "MB")
	row(fmt.Sprintf("private (RssAnon) after %d turns", turns), mb(headless.Quantile(a.anon, 0.5)), mb(headless.Quantile(o.anon, 0.5)), "MB")
	row(fmt.Sprintf("VmRSS, then %s idle", settle), mb(headless.Quantile(a.idleRSS, 0.5)), mb(headless.Quantile(o.idleRSS, 0.5)), "MB")
	row(fmt.Sprintf("RssAnon, then %s idle", settle), mb(headless.Quantile(a.idleAnon, 0.5)), mb(headless.Quantile(o.idleAnon, 0.5)), "MB")
	row("binary size", float64(size[0])/1048576, float64(size[1])/1048576, "MB")
	fmt.Printf("send→idle p90: arbor %s, %s %s (MB here are MiB)\n", ms(headless.Quantile(a.lat, 0.9)), name, ms(headless.Quantile(o.lat, 0.9)))
	return printFloor(dir, starts, headless.Quantile(o.warm, 0.5))
}

// startSettle is how long after a start's ready line its CPU is read:
// what a start does right after ready (its first read of stdin, the
// goroutines it started) belongs to the start.
const startSettle = 300 * time.Millisecond

// chordConfig writes, under a process's root, the Chord config that
// points its anthropic provider at the scripted server at url: the files
// Chord's setup wizard would write (its documented config.yaml and
// auth.yaml format), with the model the scripted server answers for.
func chordConfig(root, url string) error {
	home := filepath.Join(root, "config", "chord")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	config := `providers:
  anthropic:
    type: messages
    api_url: ` + url + `/v1/messages
    models:
      claude-sonnet-4-5:
        limit:
          context: 200000
          output: 64000
model_pools:
  default:
    - anthropic/claude-sonnet-4-5
desktop_notification: false
log_level: error
`
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(config), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(home, "auth.yaml"), []byte("anthropic:\n  - \"sk-bench\"\n"), 0o600)
}

// start launches arbor in fresh directories and waits for its ready line.
func (b *bench) start() (*headless.Proc, error) {
	b.runs++
	root := filepath.Join(b.dir, "run"+strconv.Itoa(b.runs))
	if b.shared != "" {
		root = b.shared
	}
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return nil, err
	}
	if b.setup != nil {
		if err := b.setup(root); err != nil {
			return nil, err
		}
	}
	argv := b.argv
	if argv == nil {
		argv = []string{b.bin, "headless", "--model", "script:" + b.script}
	}
	return headless.Start(argv, ws, root, append(os.Environ(), b.env...))
}

// session runs n timed send→idle turns in one process and reads its memory
// right after the last and again once it has been idle for settle.
func (b *bench) session(n int) (lat []time.Duration, cpu time.Duration, m, settled memory, err error) {
	p, err := b.start()
	if err != nil {
		return nil, 0, memory{}, memory{}, err
	}
	cpu0, err := p.CPU()
	if err != nil {
		return nil, 0, memory{}, memory{}, p.Fail(err)
	}
	for i := range n {
		line := fmt.Sprintf(`{"type":"send","content":"Message %d: answer briefly."}`+"\n", i+1)
		t0 := time.Now()
		if _, err := io.WriteString(p.In, line); err != nil {
			return nil, 0, memory{}, memory{}, p.Fail(err)
		}
		for {
			typ, payload, err := p.Next()
			if err != nil {
				return nil, 0, memory{}, memory{}, p.Fail(fmt.Errorf("turn %d: %w", i+1, err))
			}
			if typ == "error" {
				return nil, 0, memory{}, memory{}, p.Fail(fmt.Errorf("turn %d: error envelope %s", i+1, payload))
			}
			if typ != "idle" {
				continue
			}
			lat = append(lat, time.Since(t0))
			var idle struct {
				LastOutcome string `json:"last_outcome"`
			}
			if err := json.Unmarshal(payload, &idle); err != nil || idle.LastOutcome != "completed" {
				return nil, 0, memory{}, memory{}, p.Fail(fmt.Errorf("turn %d: idle %s", i+1, payload))
			}
			break
		}
	}
	cpu1, err := p.CPU()
	if err != nil {
		return nil, 0, memory{}, memory{}, p.Fail(err)
	}
	if m, err = memoryOf(p); err != nil {
		return nil, 0, memory{}, memory{}, err
	}
	time.Sleep(settle)
	if settled, err = memoryOf(p); err != nil {
		return nil, 0, memory{}, memory{}, err
	}
	return lat, (cpu1 - cpu0) / time.Duration(max(n, 1)), m, settled, p.Stop()
}

// memory is a process's resident memory in KiB: VmRSS, VmHWM and RssAnon
// (VmRSS without the pages mapped from files, such as the binary's).
type memory struct{ rss, hwm, anon int }

// settle is how long a session stays idle after its last turn before its
// memory is read the second time: what an idle session of a gateway
// keeps, once each program has done what it does while it waits.
var settle time.Duration

// memoryOf reads p's memory from /proc/PID/status.
func memoryOf(p *headless.Proc) (m memory, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Cmd.Process.Pid))
	if err != nil {
		return m, err
	}
	for l := range strings.Lines(string(data)) {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			m.rss, err = strconv.Atoi(f[1])
		case "VmHWM:":
			m.hwm, err = strconv.Atoi(f[1])
		case "RssAnon:":
			m.anon, err = strconv.Atoi(f[1])
		}
		if err != nil {
			return memory{}, err
		}
	}
	return m, nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func mb(kib int) float64 { return float64(kib) / 1024 }
