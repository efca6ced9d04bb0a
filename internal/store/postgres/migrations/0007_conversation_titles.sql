-- Conversations are named after their first prompt (store.TitleSession),
-- which names only a session without a title. Before, each front end
-- titled its conversations with its own name: those placeholders are
-- cleared, so a stored conversation is named by its next prompt.
UPDATE sessions SET title = ''
WHERE (node_id IS NULL OR node_id = 0) AND title IN ('headless', 'stream-json', 'acp');
