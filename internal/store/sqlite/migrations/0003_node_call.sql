-- The tool call that created a node, so that re-running an interrupted
-- spawn after a crash finds the node instead of creating a second one.
ALTER TABLE nodes ADD COLUMN call_id TEXT NOT NULL DEFAULT '';
