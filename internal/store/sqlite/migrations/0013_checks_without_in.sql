-- The CHECK constraints on sessions.status, runs.status and nodes.kind
-- become chains of comparisons. SQLite evaluates `x IN (…)` with more than
-- two constants by building an ephemeral b-tree of the list, once for every
-- statement that writes the column: every step's session update and every
-- node upsert (twice: its insert and its update path) paid for one. The
-- constraints admit exactly the values they admitted before.
--
-- A CHECK cannot be altered in place, so the three tables are rebuilt.
-- Sessions and runs are parents of foreign keys (messages, intents, usage
-- and compactions reference sessions; nodes reference runs), and with
-- foreign keys on, dropping a parent deletes its rows first. So the
-- constraints are deferred to the commit, the rows are copied aside, the
-- table is dropped (which counts every child row as a violation) and made
-- again, and the rows go back (which counts each of them off again); usage
-- has no index on session_id, so one is made for the drop and dropped after.

PRAGMA defer_foreign_keys = ON;

CREATE INDEX usage_session_0013 ON usage (session_id);

CREATE TABLE sessions_0013 AS SELECT * FROM sessions;
DROP TABLE sessions;
CREATE TABLE sessions (
    id                 TEXT PRIMARY KEY,
    title              TEXT NOT NULL,
    model              TEXT NOT NULL,
    workspace          TEXT NOT NULL,
    status             TEXT NOT NULL CHECK (status = 'active' OR status = 'idle' OR status = 'interrupted' OR status = 'failed'),
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL,
    last_seq           BIGINT NOT NULL DEFAULT 0,
    input_tokens       BIGINT NOT NULL DEFAULT 0,
    output_tokens      BIGINT NOT NULL DEFAULT 0,
    cache_read_tokens  BIGINT NOT NULL DEFAULT 0,
    cache_write_tokens BIGINT NOT NULL DEFAULT 0,
    cost_usd           DOUBLE PRECISION NOT NULL DEFAULT 0,
    cost_known         BOOLEAN NOT NULL DEFAULT TRUE,
    run_id             TEXT,
    node_id            BIGINT
);
INSERT INTO sessions (id, title, model, workspace, status, created_at, updated_at, last_seq,
    input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, cost_known, run_id, node_id)
SELECT id, title, model, workspace, status, created_at, updated_at, last_seq,
    input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, cost_known, run_id, node_id
FROM sessions_0013;
DROP TABLE sessions_0013;
CREATE INDEX sessions_created_at ON sessions (created_at);

DROP INDEX usage_session_0013;

CREATE TABLE runs_0013 AS SELECT * FROM runs;
DROP TABLE runs;
CREATE TABLE runs (
    id              TEXT PRIMARY KEY,
    goal            TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status = 'running' OR status = 'complete' OR status = 'failed'
                        OR status = 'cancelled' OR status = 'budget_exhausted' OR status = 'interrupted'),
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
    updated_at      BIGINT NOT NULL,
    queue           TEXT NOT NULL DEFAULT ''
);
INSERT INTO runs (id, goal, status, model, workspace, mode, budget_usd, max_tokens, max_parallel,
    node_timeout_ms, result, error, created_at, updated_at, queue)
SELECT id, goal, status, model, workspace, mode, budget_usd, max_tokens, max_parallel,
    node_timeout_ms, result, error, created_at, updated_at, queue
FROM runs_0013;
DROP TABLE runs_0013;
CREATE INDEX runs_created_at ON runs (created_at);

-- Nothing references nodes: it is rebuilt the plain way.
CREATE TABLE nodes_0013 (
    run_id         TEXT NOT NULL,
    id             BIGINT NOT NULL CHECK (id >= 1),
    parent_id      BIGINT NOT NULL,
    kind           TEXT NOT NULL CHECK (kind = 'goal' OR kind = 'host' OR kind = 'task' OR kind = 'ask'),
    spawn          TEXT NOT NULL,
    goal           TEXT NOT NULL,
    prompt         TEXT NOT NULL,
    blocked_by     TEXT NOT NULL,
    returns        TEXT NOT NULL,
    context_query  TEXT NOT NULL,
    question       TEXT NOT NULL,
    options        TEXT NOT NULL,
    default_answer TEXT NOT NULL,
    state          TEXT NOT NULL,
    result         TEXT NOT NULL,
    error          TEXT NOT NULL,
    draft          TEXT NOT NULL,
    has_draft      INTEGER NOT NULL CHECK (has_draft = 0 OR has_draft = 1),
    context        TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    attempts       BIGINT NOT NULL,
    synthesized    BIGINT NOT NULL,
    notice         TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL,
    started_at     BIGINT,
    ended_at       BIGINT,
    call_id        TEXT NOT NULL DEFAULT '',
    budget_usd     DOUBLE PRECISION NOT NULL DEFAULT 0,
    max_tokens     BIGINT NOT NULL DEFAULT 0,
    model          TEXT NOT NULL DEFAULT '',
    runner         TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, id),
    FOREIGN KEY (run_id) REFERENCES runs (id)
);
INSERT INTO nodes_0013 (run_id, id, parent_id, kind, spawn, goal, prompt, blocked_by, returns, context_query,
    question, options, default_answer, state, result, error, draft, has_draft, context, session_id, attempts,
    synthesized, notice, created_at, updated_at, started_at, ended_at, call_id, budget_usd, max_tokens, model, runner)
SELECT run_id, id, parent_id, kind, spawn, goal, prompt, blocked_by, returns, context_query,
    question, options, default_answer, state, result, error, draft, has_draft, context, session_id, attempts,
    synthesized, notice, created_at, updated_at, started_at, ended_at, call_id, budget_usd, max_tokens, model, runner
FROM nodes;
DROP TABLE nodes;
ALTER TABLE nodes_0013 RENAME TO nodes;
