-- The W3C traceparent a run was started under (issue #32): its spans join
-- that trace on every machine. '' for a run of a trace of its own (every
-- run made before 0014).
ALTER TABLE runs ADD COLUMN trace_parent TEXT NOT NULL DEFAULT '';
