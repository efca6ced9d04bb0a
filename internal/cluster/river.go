package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/postgres"
)

// Options configure a Cluster. Zero values take the defaults.
type Options struct {
	// Unit is the work of one job; nil opens an insert-only Cluster, which
	// enqueues and cancels but works no jobs and runs no reaper.
	Unit Unit
	// Driver, when set, takes cluster runs handed to this process
	// (arbor.run_drive jobs), and the run reaper runs here.
	Driver Driver
	// Controller carries out the control requests (Request) of the
	// runs this process drives.
	Controller Controller
	// Queue is the River queue worked and inserted into ("default").
	Queue string
	// Concurrency is how many jobs this process works at once (4).
	Concurrency int
	// Remote says the units are turns handed out by run drivers (Remote)
	// on the turns queue of Queue (TurnQueue), of which this process works
	// Turns at once, besides Concurrency jobs of Queue. A driver hands a
	// dead unit's turn out again itself, so the node reaper does not run,
	// and a unit waiting for the node lease of the turn before it is
	// offered again soon, not after a TTL.
	Remote bool
	Turns  int
	// LeaseTTL is the node lease's time to live (6 s), renewed every
	// Heartbeat (LeaseTTL/3). A worker elsewhere takes a dead worker's
	// work over a TTL after its last renewal; on this machine at once
	// (store.Lease.Dead). The bounds are config.Cluster's
	// (docs/configuration.md, cluster:); the run leases of the engines
	// driving runs use the same two values.
	LeaseTTL  time.Duration
	Heartbeat time.Duration
	// ReapEvery is the period of the reapers and the job sweep
	// (Heartbeat, at most 500 ms: a pass is what notices a dead driver on
	// this machine, whose lease need not expire).
	ReapEvery time.Duration
	// UnitTimeout bounds one unit (10 min): River cancels its context
	// then. River's rescue of a job whose worker vanished, the backstop of
	// the reaper, comes after twice that. It must stay finite: River never
	// rescues a job without a timeout.
	UnitTimeout time.Duration
	// Owner names this process in node leases (store.NewOwner()).
	Owner store.Owner
	// Now is the clock of lease times (time.Now).
	Now func() time.Time
	// FetchPoll is how often an idle worker looks for jobs when no insert
	// notification woke it (250 ms). River sends an insert notification
	// at most once per fetch cooldown (10 ms here, River's default is
	// 100 ms) per queue and client, so a job inserted just after another
	// may wait for this poll.
	FetchPoll time.Duration
	// Logger receives River's logs (warnings and errors of a discarding
	// logger by default).
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Queue == "" {
		o.Queue = river.QueueDefault
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = o.LeaseTTL / 3
	}
	if o.ReapEvery <= 0 {
		o.ReapEvery = min(o.Heartbeat, maxReapEvery)
	}
	if o.UnitTimeout <= 0 {
		o.UnitTimeout = 10 * time.Minute
	}
	if o.Owner.ID == "" {
		o.Owner = store.NewOwner()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.FetchPoll <= 0 {
		o.FetchPoll = DefaultFetchPoll
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Defaults of Options.
const (
	DefaultLeaseTTL  = 6 * time.Second
	DefaultFetchPoll = 250 * time.Millisecond
	maxReapEvery     = 500 * time.Millisecond
)

// TurnQueue is the River queue of the node turns of queue's runs
// (Remote): its own, so that a worker works turns only when it runs them
// (worker --turns) and a worker busy with runs still takes turns.
func TurnQueue(queue string) string { return queue + "|turns" }

// notifyCooldown is the least time between two insert notifications of
// a client per queue, and fetchCooldown the least time between two
// fetches of a worker per queue. River ties both to one setting, whose
// default (100 ms) would be most of a run's start; a notification
// suppressed by the first cooldown leaves the job to the next poll
// (FetchPoll), which a node turn inserted a few milliseconds after the
// previous one — every hop of a chain of nodes — would wait for. Quick
// notifications and a 10 ms fetch cooldown: hops are prompt, and a
// worker's fetch queries stay at 100 a second per queue at most.
const (
	notifyCooldown = time.Millisecond
	fetchCooldown  = 10 * time.Millisecond
)

// working reports whether the Cluster works jobs (else it only inserts).
func (o Options) working() bool { return o.Unit != nil || o.Driver != nil }

// Cluster is River on one arbor schema, plus the claim, the heartbeat,
// the reaper and the control listener. Its methods are safe for
// concurrent use.
type Cluster struct {
	st     *postgres.Store
	client *river.Client[pgx.Tx]
	schema string
	o      Options

	units units // the units running in this process, by node
	// here counts the turns run here (Remote.RunHere), each of which
	// is the claimant -here in its lease owner.
	here atomic.Int64
	// reqs are the control requests being carried out, each on a
	// goroutine of its own started by the control listener, which waits
	// for them when it returns.
	reqs sync.WaitGroup
	svc  service // Start/Stop of the reaper and the control listener
}

// Open migrates River's tables into st's schema and returns a Cluster on
// st's pool. It does not start working: call Start. st stays the
// caller's and must outlive the Cluster.
func Open(ctx context.Context, st *postgres.Store, o Options) (*Cluster, error) {
	o = o.withDefaults()
	pool := st.Pool()
	var schema string
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return nil, fmt.Errorf("open cluster: read the schema: %w", err)
	}
	driver := riverpgxv5.New(pool)
	if err := migrateRiver(ctx, st, driver, schema, o.Logger); err != nil {
		return nil, fmt.Errorf("open cluster: %w", err)
	}
	c := &Cluster{st: st, schema: schema, o: o}
	cfg := &river.Config{
		Schema: schema,
		Logger: o.Logger,
		// RescueStuckJobsAfter >= JobTimeout >= the longest unit, or River
		// rescues live jobs (or, with no timeout, none).
		JobTimeout:           o.UnitTimeout,
		RescueStuckJobsAfter: 2 * o.UnitTimeout,
		// A hand-off waits for a fetch: River's defaults (100 ms between
		// fetches, 1 s polls) would be most of a run's start.
		FetchCooldown:     notifyCooldown,
		FetchPollInterval: o.FetchPoll,
	}
	if o.working() {
		workers := river.NewWorkers()
		// A process that hands turns out registers the kind it inserts,
		// as River asks, even when it works none (no turns queue).
		if o.Unit != nil || o.Remote {
			if err := river.AddWorkerSafely(workers, &nodeWorker{c: c}); err != nil {
				return nil, fmt.Errorf("open cluster: %w", err)
			}
		}
		if o.Driver != nil {
			if err := river.AddWorkerSafely(workers, &driveWorker{c: c}); err != nil {
				return nil, fmt.Errorf("open cluster: %w", err)
			}
		}
		cfg.Workers = workers
		cfg.Queues = map[string]river.QueueConfig{o.Queue: {MaxWorkers: o.Concurrency, FetchCooldown: fetchCooldown}}
		if o.Remote && o.Turns > 0 {
			cfg.Queues[TurnQueue(o.Queue)] = river.QueueConfig{MaxWorkers: o.Turns, FetchCooldown: fetchCooldown}
		}
	}
	client, err := river.NewClient(driver, cfg)
	if err != nil {
		return nil, fmt.Errorf("open cluster: river client: %w", err)
	}
	c.client = client
	return c, nil
}

// lockMigrations is the advisory lock of the store's migrations
// (postgres/migrate.go takes it per transaction); River's migrations take
// it for their whole run on one session, so a store opening the schema
// and another process migrating River wait for each other.
const lockMigrations = `SELECT pg_advisory_lock(hashtext('arbor.migrate'), hashtext(current_schema()))`

const unlockMigrations = `SELECT pg_advisory_unlock(hashtext('arbor.migrate'), hashtext(current_schema()))`

// migrateRiver runs River's migrations up to its newest version under
// the migration lock. Running it again is a no-op.
func migrateRiver(ctx context.Context, st *postgres.Store, driver *riverpgxv5.Driver, schema string, logger *slog.Logger) (err error) {
	m, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema, Logger: logger})
	if err != nil {
		return fmt.Errorf("river migrator: %w", err)
	}
	conn, err := st.Pool().Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate river: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, lockMigrations); err != nil {
		return fmt.Errorf("migrate river: lock: %w", err)
	}
	defer func() {
		// A fresh context: the lock must go even when ctx ended.
		if _, uerr := conn.Exec(context.WithoutCancel(ctx), unlockMigrations); uerr != nil {
			err = errors.Join(err, fmt.Errorf("migrate river: unlock: %w", uerr))
		}
	}()
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrate river: %w", err)
	}
	return nil
}

// Client is the River client, for what this package does not wrap
// (subscriptions, job lists).
func (c *Cluster) Client() *river.Client[pgx.Tx] { return c.client }
