-- arbor schema for PostgreSQL, version 1: the SQLite schema of versions
-- 1-10 in one step. The same tables, columns and meanings; times are unix
-- nanoseconds (UTC) in BIGINT columns, JSON is TEXT, has_draft is INTEGER
-- 0/1. Differences: ids of usage and compactions are identity columns, an
-- intent's result is BYTEA (tool output may hold NUL bytes, which TEXT
-- cannot), and the append-only rule of messages is a PL/pgSQL trigger.

CREATE TABLE sessions (
    id                 TEXT PRIMARY KEY,
    title              TEXT NOT NULL,
    model              TEXT NOT NULL,
    workspace          TEXT NOT NULL,
    status             TEXT NOT NULL CHECK (status IN ('active', 'idle', 'interrupted', 'failed')),
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL,
    -- last_seq is the seq of the newest message; appends bump it first, so
    -- the session row serializes concurrent appends.
    last_seq           BIGINT NOT NULL DEFAULT 0,
    input_tokens       BIGINT NOT NULL DEFAULT 0,
    output_tokens      BIGINT NOT NULL DEFAULT 0,
    cache_read_tokens  BIGINT NOT NULL DEFAULT 0,
    cache_write_tokens BIGINT NOT NULL DEFAULT 0,
    cost_usd           DOUBLE PRECISION NOT NULL DEFAULT 0,
    cost_known         BOOLEAN NOT NULL DEFAULT TRUE,
    -- The tree node whose agent the session is; NULL for conversations.
    run_id             TEXT,
    node_id            BIGINT
);

CREATE INDEX sessions_created_at ON sessions (created_at);

CREATE TABLE messages (
    session_id TEXT NOT NULL REFERENCES sessions (id),
    seq        BIGINT NOT NULL,
    role       TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (session_id, seq)
);

CREATE FUNCTION messages_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'messages are append-only';
END
$$;

CREATE TRIGGER messages_append_only BEFORE UPDATE ON messages
    FOR EACH ROW EXECUTE FUNCTION messages_append_only();

CREATE TABLE intents (
    session_id TEXT NOT NULL REFERENCES sessions (id),
    call_id    TEXT NOT NULL,
    tool       TEXT NOT NULL,
    input      TEXT,
    status     TEXT NOT NULL CHECK (status IN ('started', 'finished')),
    result     BYTEA,
    is_error   BOOLEAN NOT NULL DEFAULT FALSE,
    started_at BIGINT NOT NULL,
    ended_at   BIGINT,
    -- The process group of the tool's process; 0 = none recorded.
    pgid       BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, call_id)
);

CREATE TABLE usage (
    id                 BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id         TEXT NOT NULL REFERENCES sessions (id),
    model              TEXT NOT NULL,
    input_tokens       BIGINT NOT NULL,
    output_tokens      BIGINT NOT NULL,
    cache_read_tokens  BIGINT NOT NULL,
    cache_write_tokens BIGINT NOT NULL,
    cost_usd           DOUBLE PRECISION NOT NULL,
    cost_known         BOOLEAN NOT NULL,
    created_at         BIGINT NOT NULL
);

-- No index on usage (session_id): nothing reads usage rows by session (a
-- session's totals are on its row); see sqlite's 0011.

CREATE TABLE compactions (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id),
    up_to_seq  BIGINT NOT NULL,
    summary    TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE INDEX compactions_session ON compactions (session_id, id);

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
    run_id         TEXT NOT NULL REFERENCES runs (id),
    id             BIGINT NOT NULL CHECK (id >= 1),
    parent_id      BIGINT NOT NULL,
    kind           TEXT NOT NULL CHECK (kind IN ('goal', 'host', 'task', 'ask')),
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
    call_id        TEXT NOT NULL DEFAULT '',
    budget_usd     DOUBLE PRECISION NOT NULL DEFAULT 0,
    max_tokens     BIGINT NOT NULL DEFAULT 0,
    model          TEXT NOT NULL DEFAULT '',
    runner         TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, id)
);

-- Owner leases (store.LeaseStore); a released lease is deleted.
CREATE TABLE leases (
    key          TEXT PRIMARY KEY,
    owner        TEXT NOT NULL,
    pid          BIGINT NOT NULL,
    host         TEXT NOT NULL,
    addr         TEXT NOT NULL,
    acquired_at  BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL
);
