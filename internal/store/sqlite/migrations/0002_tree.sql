-- arbor schema, version 2: coordination-tree runs and their nodes.
-- Same conventions as version 1 (times are unix nanoseconds in BIGINT
-- columns, JSON is TEXT, portable types and syntax only), except that the
-- node booleans are INTEGER 0/1, which both dialects store and compare alike.

CREATE TABLE runs (
    id              TEXT PRIMARY KEY,
    goal            TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('running', 'complete', 'failed', 'cancelled', 'budget_exhausted', 'interrupted')),
    model           TEXT NOT NULL,
    workspace       TEXT NOT NULL,
    mode            TEXT NOT NULL,
    budget_usd      DOUBLE PRECISION NOT NULL,
    max_tokens      BIGINT NOT NULL,
    max_parallel    BIGINT NOT NULL,
    node_timeout_ms BIGINT NOT NULL,
    result          TEXT NOT NULL,
    error           TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);

CREATE INDEX runs_created_at ON runs (created_at);

CREATE TABLE nodes (
    run_id         TEXT NOT NULL,
    id             BIGINT NOT NULL CHECK (id >= 1),
    parent_id      BIGINT NOT NULL,
    kind           TEXT NOT NULL CHECK (kind IN ('goal', 'task', 'ask')),
    spawn          TEXT NOT NULL,
    goal           TEXT NOT NULL,
    prompt         TEXT NOT NULL,
    blocked_by     TEXT NOT NULL, -- JSON array of node ids, or null
    returns        TEXT NOT NULL,
    context_query  TEXT NOT NULL,
    question       TEXT NOT NULL,
    options        TEXT NOT NULL, -- JSON array of strings, or null
    default_answer TEXT NOT NULL,
    state          TEXT NOT NULL,
    result         TEXT NOT NULL,
    error          TEXT NOT NULL,
    draft          TEXT NOT NULL,
    has_draft      INTEGER NOT NULL CHECK (has_draft IN (0, 1)),
    context        TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    attempts       BIGINT NOT NULL,
    synthesized    BIGINT NOT NULL,
    notice         TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL,
    started_at     BIGINT,
    ended_at       BIGINT,
    PRIMARY KEY (run_id, id),
    FOREIGN KEY (run_id) REFERENCES runs (id)
);

CREATE INDEX nodes_run ON nodes (run_id);
