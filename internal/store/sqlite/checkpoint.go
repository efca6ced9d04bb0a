package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
)

// checkpointEvery is how many committed write transactions pass between
// two background checkpoints: a few hundred WAL frames.
const checkpointEvery = 64

// restartFrames is the length of WAL after which the writer restarts it
// from its beginning (SQLite's default autocheckpoint threshold), and
// backstopFrames the writer's own autocheckpoint, which only runs when
// the checkpointer falls behind (or fails).
const (
	restartFrames  = 1000
	backstopFrames = 4 * restartFrames
)

// checkpointer copies the WAL into the database file in the background,
// on a connection and a goroutine of its own, while the writer goes on
// committing.
//
// Why: in WAL mode with synchronous=NORMAL a commit never waits for the
// disk, but a checkpoint does: it fsyncs the WAL before it copies the
// frames and the database file after. SQLite's autocheckpoint runs in the
// commit that crosses 1,000 frames, so that commit, and every write queued
// behind it, waited for both fsyncs of the whole 4 MiB of WAL (a quarter
// to a third of a plain step on the reference machine, BenchmarkStep). A
// PASSIVE checkpoint here copies and syncs what has been committed so far
// without taking the write lock.
//
// Only a checkpoint that copies every frame with no commit beside it lets
// the next write restart the WAL from its beginning, and two checkpoints
// cannot run at once. So once the WAL is restartFrames long and copied,
// the checkpointer hands over (due) and stays idle; the writer, after its
// next commit and before the next transaction, checkpoints the few frames
// written since (a short fsync) and takes the lead back by clearing due.
// The writer's own autocheckpoint is moved to backstopFrames. The WAL
// thus restarts at about restartFrames, as before
// (TestBackgroundCheckpoint).
//
// Durability is unchanged: what a checkpoint copies was committed to the
// WAL already, and SQLite keeps the WAL until its frames are in the file.
type checkpointer struct {
	db   *sql.DB       // one connection, not query_only
	kick chan struct{} // capacity 1: a kick while one is pending is dropped
	stop chan struct{}
	wg   sync.WaitGroup
	due  atomic.Bool // the WAL is long and copied: the writer's turn

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
		if c.due.Load() {
			continue // the writer's turn to restart the WAL
		}
		// PASSIVE never waits on a lock and never blocks a writer; it
		// copies what no reader still needs. A busy result (another
		// checkpoint is running, perhaps another process's) or an error
		// leaves the work to the next one, or to the writer's backstop.
		// The statement is not cancelled by Close, which waits for it (a
		// few milliseconds).
		copied, err := walCheckpoint(c.db.QueryRowContext(context.Background(), walCheckpointSQL))
		if err == nil && copied >= restartFrames {
			c.due.Store(true)
		}
		if c.ran != nil {
			c.ran <- err
		}
	}
}

// walCheckpointSQL checkpoints what it can without waiting and returns
// whether it was blocked, the frames in the WAL and the frames copied.
const walCheckpointSQL = "PRAGMA wal_checkpoint(PASSIVE)"

// walCheckpoint scans the row of walCheckpointSQL and returns how many
// frames the WAL holds, all of them copied into the file, or 0 when some
// were not (the checkpoint was blocked or readers still use them).
func walCheckpoint(row scanner) (int64, error) {
	var busy, frames, copied int64
	if err := row.Scan(&busy, &frames, &copied); err != nil {
		return 0, err
	}
	if busy != 0 || copied != frames {
		return 0, nil
	}
	return frames, nil
}

// close stops the goroutine, waiting for a running checkpoint, and
// closes the connection. Called once (Store.Close's sync.Once).
func (c *checkpointer) close() error {
	close(c.stop)
	c.wg.Wait()
	return c.db.Close()
}
