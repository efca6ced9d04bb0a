// Command floor is the least a headless session built on arbor's stack can
// be: a Go process that links the same SQLite driver and Anthropic SDK,
// opens a store the way arbor's is opened (WAL, synchronous=NORMAL),
// writes one row, makes an SDK client and prints a ready line, then waits
// for stdin to end. bench/envelope times its start and reads its memory
// beside arbor's (-floor), so that docs/benchmarks.md can say how far a
// start-up target is from what no process of this stack reaches here.
//
// Run it as `floor headless DB`: the argument makes arbor's procs
// package take one processor in its initialiser, as `arbor headless`
// does.
package main

import (
	"bufio"
	"database/sql"
	"fmt"
	"os"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	_ "github.com/arbor-run/arbor/internal/procs"
	"github.com/arbor-run/arbor/internal/store/sqlite/driver"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: floor headless DB")
		os.Exit(2)
	}
	if err := run(os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	db, err := sql.Open(driver.Name, "file:"+path+"?_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=5000")
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, created_at INTEGER NOT NULL)"); err != nil {
		return err
	}
	id := fmt.Sprint(os.Getpid())
	if _, err := db.Exec("INSERT OR REPLACE INTO sessions VALUES (?, unixepoch())", id); err != nil {
		return err
	}
	_ = anthropic.NewClient(option.WithAPIKey("sk-floor"), option.WithBaseURL("http://127.0.0.1:9"))
	fmt.Printf("{\"type\":\"ready\",\"seq\":0,\"payload\":{\"session_id\":%q}}\n", id)
	for sc := bufio.NewScanner(os.Stdin); sc.Scan(); {
	}
	return nil
}
