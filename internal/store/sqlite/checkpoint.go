package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// checkpointEvery is how many committed write transactions pass between
// two background checkpoints: a few hundred WAL frames, a fraction of
// the 1,000 at which the writer's own autocheckpoint runs.
const checkpointEvery = 64

// checkpointer copies the WAL into the database file in the background,
// on a connection and a goroutine of its own, while the writer goes on
// committing.
//
// Why: in WAL mode with synchronous=NORMAL a commit never waits for the
// disk, but a checkpoint does: it fsyncs the WAL before it copies the
// frames and the database file after. SQLite's autocheckpoint runs in the
// commit that crosses 1,000 frames, so that commit, and every write queued
// behind it, waited for both fsyncs of the whole 4 MiB of WAL (a third of
// a plain step's time on the reference machine, BenchmarkStep). A PASSIVE
// checkpoint here copies and syncs what has been committed so far without
// taking the write lock. The writer's autocheckpoint still runs at 1,000
// frames, where it finds most frames copied and synced and does the rest;
// only it can restart the WAL from its beginning (that needs every frame
// copied with no commit in between), so the WAL stays as long as before.
//
// Durability is unchanged: what a checkpoint copies was committed to the
// WAL already, and SQLite keeps the WAL until its frames are in the file.
type checkpointer struct {
	db   *sql.DB       // one connection, not query_only
	kick chan struct{} // capacity 1: a kick while one is pending is dropped
	stop chan struct{}
	wg   sync.WaitGroup

	// ran, when set (tests only), is signalled after every checkpoint.
	ran chan<- error
}

func startCheckpointer(db *sql.DB, ran chan<- error) *checkpointer {
	c := &checkpointer{db: db, kick: make(chan struct{}, 1), stop: make(chan struct{}), ran: ran}
	c.wg.Go(c.loop)
	return c
}

// request asks for a checkpoint soon, without waiting for it. Requests
// made while a checkpoint is pending or running fold into the next one.
func (c *checkpointer) request() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *checkpointer) loop() {
	for {
		select {
		case <-c.stop:
			return
		case <-c.kick:
		}
		// PASSIVE never waits on a lock and never blocks a writer; it
		// copies what no reader still needs. A busy result (the writer's
		// own checkpoint is running) or an error leaves the work to that
		// autocheckpoint, as without this goroutine. The statement is not
		// cancelled by Close, which waits for it (a few milliseconds).
		_, err := c.db.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)")
		if c.ran != nil {
			c.ran <- err
		}
	}
}

// close stops the goroutine, waiting for a running checkpoint, and
// closes the connection. Called once (Store.Close's sync.Once).
func (c *checkpointer) close() error {
	close(c.stop)
	c.wg.Wait()
	return c.db.Close()
}
