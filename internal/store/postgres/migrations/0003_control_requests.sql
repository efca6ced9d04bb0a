-- Requests to the process driving a cluster run, from any machine
-- (arbor answer, arbor stop): stored with a notification on
-- arbor_control, carried out by the driver, which records the outcome.
-- A request no driver took yet is carried out by the worker that takes
-- the run next.
CREATE TABLE control_requests (
    id         BIGSERIAL PRIMARY KEY,
    run_id     TEXT NOT NULL REFERENCES runs (id),
    node_id    BIGINT NOT NULL,
    op         TEXT NOT NULL,
    text       TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    done_at    BIGINT,
    state      TEXT NOT NULL DEFAULT '',
    error      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX control_requests_open ON control_requests (run_id, id) WHERE done_at IS NULL;
