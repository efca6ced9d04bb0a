package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/arbor-run/arbor/bench/internal/headless"
)

// floorBin is -floor: the bench/floor binary, or "".
var floorBin string

// printFloor times starts starts of the floor binary (with one store,
// as a gateway's later sessions find theirs) and prints its median ready
// and RssAnon at ready; with vs set, also its ready as a fraction of vs.
// Without -floor it prints nothing.
func printFloor(dir string, starts int, vs time.Duration) error {
	if floorBin == "" {
		return nil
	}
	root := filepath.Join(dir, "floor-state")
	b := bench{dir: root, argv: []string{floorBin, "headless", filepath.Join(root, "floor.db")}}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	var ready []time.Duration
	var anon []int
	for range starts {
		p, err := b.start()
		if err != nil {
			return fmt.Errorf("floor: %w", err)
		}
		m, err := memoryOf(p)
		if err == nil {
			err = p.Stop()
		}
		if err != nil {
			return fmt.Errorf("floor: %w", err)
		}
		ready, anon = append(ready, p.Ready), append(anon, m.anon)
	}
	r := headless.Quantile(ready, 0.5)
	fmt.Printf("floor (bench/floor: the Go runtime, the same SQLite driver and Anthropic SDK, one write, a ready line): ready median %s, RssAnon at ready %.1f MiB",
		ms(r), mb(headless.Quantile(anon, 0.5)))
	if vs > 0 {
		fmt.Printf("; ready %.2f× the other program's (existing state)", float64(r)/float64(vs))
	}
	fmt.Println()
	return nil
}
