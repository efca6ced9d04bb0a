-- arbor schema, version 1.
-- Times are unix nanoseconds (UTC) in BIGINT columns; booleans are BOOLEAN;
-- JSON is TEXT. Only portable types and syntax, except the trigger at the end.

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
    cost_known         BOOLEAN NOT NULL DEFAULT TRUE
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

CREATE TABLE intents (
    session_id TEXT NOT NULL REFERENCES sessions (id),
    call_id    TEXT NOT NULL,
    tool       TEXT NOT NULL,
    input      TEXT,
    status     TEXT NOT NULL CHECK (status IN ('started', 'finished')),
    result     TEXT,
    is_error   BOOLEAN NOT NULL DEFAULT FALSE,
    started_at BIGINT NOT NULL,
    ended_at   BIGINT,
    PRIMARY KEY (session_id, call_id)
);

CREATE TABLE usage (
    id                 INTEGER PRIMARY KEY,
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

CREATE INDEX usage_session ON usage (session_id);

CREATE TABLE compactions (
    id         INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id),
    up_to_seq  BIGINT NOT NULL,
    summary    TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE INDEX compactions_session ON compactions (session_id, id);

-- Messages are append-only; the database refuses to rewrite one.
CREATE TRIGGER messages_append_only BEFORE UPDATE ON messages
BEGIN
    SELECT RAISE(ABORT, 'messages are append-only');
END;
