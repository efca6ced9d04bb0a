-- Per-node budgets: what a node and its subtree may spend, in dollars and
-- tokens; 0 is no limit of the node's own (the run's still applies).
ALTER TABLE nodes ADD COLUMN budget_usd DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE nodes ADD COLUMN max_tokens BIGINT NOT NULL DEFAULT 0;
