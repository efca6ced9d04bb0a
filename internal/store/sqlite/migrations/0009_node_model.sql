-- The model a node runs on: a provider/name reference, "" for the run's
-- model (nodes made before 0009, and nodes that never chose one).
ALTER TABLE nodes ADD COLUMN model TEXT NOT NULL DEFAULT '';
