-- The process group a tool call's process runs in, so that resuming after
-- a crash can kill what the call left running before reporting it
-- interrupted. 0 = no process group recorded.
ALTER TABLE intents ADD COLUMN pgid BIGINT NOT NULL DEFAULT 0;
