-- The interactions (approvals, questions) waiting on a person in the
-- worker driving a cluster run, as that worker last published them, so
-- that a front end on any machine shows them; it resolves them with a
-- control request. The set of a run is replaced as a whole.
CREATE TABLE pending_interactions (
    run_id TEXT NOT NULL,
    id     TEXT NOT NULL,
    seq    BIGINT NOT NULL,
    body   TEXT NOT NULL,
    PRIMARY KEY (run_id, id)
);
