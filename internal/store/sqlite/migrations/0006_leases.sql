-- Owner leases (see store.LeaseStore): one row per held lease, keyed by
-- what it guards ("run:<id>" today, node leases of cluster workers later).
-- A released lease is deleted. Times are unix nanoseconds.
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
