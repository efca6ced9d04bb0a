-- The conversations of a workspace (sessions no tree node owns), found
-- without a scan of every node's session: LatestConversation (--continue)
-- and Conversations (ACP's session/list) took 40-60 ms at 200,000 node
-- sessions, 1-3 ms with it. Partial and keyed by workspace alone, it costs
-- a node's session nothing and a conversation's steps (which touch
-- updated_at) nothing: only a conversation's insert writes to it.
CREATE INDEX sessions_conversations ON sessions (workspace) WHERE (node_id IS NULL OR node_id = 0);
