-- The external agent that runs a node ("claude-code"); "" for arbor's own
-- agent loop (nodes made before 0010, and nodes that never chose one).
ALTER TABLE nodes ADD COLUMN runner TEXT NOT NULL DEFAULT '';
