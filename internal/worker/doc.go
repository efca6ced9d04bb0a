// Package worker is the cluster's front end: the process that arbor
// worker runs, and the follower of a cluster run that arbor run --cluster
// shows. It sits above app (it opens a view of the App per run and its
// turns) and beside the other front ends; cluster below it holds the
// queue, the claims and the leases (docs/cluster.md).
//
// A Worker serves one queue of a PostgreSQL store: it drives the runs
// handed to it (cluster.Driver: one engine per run, the run's owner
// socket and endpoint served while it holds the run), carries out the
// control requests of the runs it drives (cluster.Controller), and runs
// the node turns other drivers hand out (cluster.Unit: arbor's agent loop
// on the node's stored session, the tree tools, budgets and approvals
// reached over the driver's endpoint). Follow shows a run that another
// process drives until it ends.
//
// Invariants: every goroutine a Worker starts (the drives, the pending
// publishers, the turns' pings and bridges) is waited for before Serve
// returns; mu guards only the maps of runs and apps, and no I/O happens
// under it.
package worker
