// Package cluster holds the building blocks of arbor's cluster dispatcher
// (docs/cluster.md): River (github.com/riverqueue/river) on the same
// PostgreSQL schema as the postgres store, one job kind arbor.node_step,
// and the rules that make a node's work happen exactly once across any
// number of worker processes.
//
// What it provides:
//
//   - Open: a River client (insert-only, or working when a Unit is given)
//     on the store's pool, after River's migrations ran under the store's
//     advisory migration lock; River's tables live in the store's schema.
//   - EnqueueTx: insert a node's job on the caller's transaction, so that
//     with postgres.Store.CommitTx a transition and its job commit or roll
//     back together.
//   - The claim: a job's first act is a compare-and-set on the node (it is
//     still runnable and its attempts equal the job's attempt) that takes
//     the node lease node:<run>/<id> in the same transaction. Of any number
//     of jobs for one node and attempt, one holds the lease at a time; a
//     stale job (an older attempt, or a node that moved on) does nothing.
//   - Transition: the end of a unit, a compare-and-set of the node that
//     fails with ErrStale when the node is no longer the claim's.
//   - The heartbeat (every Options.Heartbeat while the unit runs; a
//     lost lease cancels the unit) and the reaper (one pass at a time across all processes,
//     by an advisory lock): a runnable node whose lease expired and that
//     has no live job gets attempts+1 and a new job in one transaction.
//   - Dead holders (dead.go): a claim takes over a node lease whose
//     holder is dead (store.Lease.Dead: expired, or its process gone on
//     this machine) and finishes the dead holder's River job in the same
//     transaction; the job sweep finishes the running jobs of dead
//     workers that nobody took over. River's rescue (which would run a
//     job again) is never waited for.
//   - CancelNodeTx: cancel a node's jobs and notify arbor_control in the
//     caller's transaction; the process running the node cancels the
//     unit's context.
//
// Who uses it: internal/worker is the process side (arbor worker drives
// runs, carries out their control requests and runs handed-out turns
// through a Cluster; Follow shows a cluster run), arbor run --cluster
// submits runs with Submit, and the web view and arbor answer/stop reach
// a driven run through Send and SendIfDriven.
//
// Invariants: a Cluster's goroutines (River's, the reaper, the control
// listener, one heartbeat per running unit) are started by Start and
// all returned when Stop returns; Start and Stop are safe to call twice.
// No transaction is held across a Unit.
package cluster
