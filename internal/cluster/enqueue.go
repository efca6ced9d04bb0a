package cluster

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// JobKind is the River kind of a node's unit of work.
const JobKind = "arbor.node_step"

// NodeStep is the arguments of an arbor.node_step job: which node, and
// which attempt of it the job is for.
type NodeStep struct {
	Run     string `json:"run"`
	Node    int64  `json:"node"`
	Attempt int    `json:"attempt"`
	// Turn, Endpoint and Token are set on a turn a run's driver handed
	// out (Remote): the turn's id and the driver's owner endpoint.
	Turn     string `json:"turn,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
	Token    string `json:"token,omitempty"`
}

// Kind implements river.JobArgs.
func (NodeStep) Kind() string { return JobKind }

// LeaseKey is the key of the node lease: node:<run>/<id>.
func (a NodeStep) LeaseKey() string { return NodeLeaseKey(a.Run, a.Node) }

// NodeLeaseKey is the key of node id's lease in run.
func NodeLeaseKey(run string, id int64) string {
	return "node:" + run + "/" + strconv.FormatInt(id, 10)
}

// EnqueueTx inserts the job of args on tx: it exists when tx commits and
// never when it rolls back. It returns the job's id.
func (c *Cluster) EnqueueTx(ctx context.Context, tx pgx.Tx, args NodeStep) (int64, error) {
	res, err := c.client.InsertTx(ctx, tx, args, &river.InsertOpts{Queue: c.o.Queue})
	if err != nil {
		return 0, fmt.Errorf("enqueue node %d of run %s (attempt %d): %w", args.Node, args.Run, args.Attempt, err)
	}
	return res.Job.ID, nil
}
