-- A run's root may be a host node: the main agent of a headless session,
-- which its front end drives while the engine runs its children. The kind
-- CHECK of version 2 cannot be altered in place, so the table is rebuilt
-- (nothing references it). The nodes_run index is not recreated: the
-- primary key (run_id, id) already serves lookups by run.

CREATE TABLE nodes_v4 (
    run_id         TEXT NOT NULL,
    id             BIGINT NOT NULL CHECK (id >= 1),
    parent_id      BIGINT NOT NULL,
    kind           TEXT NOT NULL CHECK (kind IN ('goal', 'host', 'task', 'ask')),
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
    call_id        TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, id),
    FOREIGN KEY (run_id) REFERENCES runs (id)
);

INSERT INTO nodes_v4 (run_id, id, parent_id, kind, spawn, goal, prompt, blocked_by, returns, context_query,
    question, options, default_answer, state, result, error, draft, has_draft, context, session_id, attempts,
    synthesized, notice, created_at, updated_at, started_at, ended_at, call_id)
SELECT run_id, id, parent_id, kind, spawn, goal, prompt, blocked_by, returns, context_query,
    question, options, default_answer, state, result, error, draft, has_draft, context, session_id, attempts,
    synthesized, notice, created_at, updated_at, started_at, ended_at, call_id
FROM nodes;

DROP TABLE nodes;

ALTER TABLE nodes_v4 RENAME TO nodes;
