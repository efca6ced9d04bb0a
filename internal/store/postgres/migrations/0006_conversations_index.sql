-- The conversations of a workspace (sessions no tree node owns), found
-- without a scan of every node's session: LatestConversation (--continue)
-- and Conversations (ACP's session/list). Partial and keyed by workspace
-- alone, it costs a node's session nothing and a conversation's steps
-- (which touch updated_at) nothing: only a conversation's insert writes
-- to it.
CREATE INDEX IF NOT EXISTS sessions_conversations ON sessions (workspace) WHERE (node_id IS NULL OR node_id = 0);
