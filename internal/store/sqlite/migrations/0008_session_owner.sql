-- A session records the tree node whose agent it is, instead of readers
-- parsing "<run>.<node>" out of its id. NULL for conversations a person or
-- client opened (including a hosted run's main agent, whose node is of kind
-- 'host'; ask nodes have no agent). Existing rows are backfilled from the
-- goal and task nodes that name them, or whose "<run>.<node>" id they carry
-- (nodes activated by an older arbor have an empty session_id).

ALTER TABLE sessions ADD COLUMN run_id TEXT;
ALTER TABLE sessions ADD COLUMN node_id BIGINT;

UPDATE sessions
SET run_id = (
        SELECT n.run_id FROM nodes n
        WHERE n.kind IN ('goal', 'task') AND (n.session_id = sessions.id OR n.run_id || '.' || n.id = sessions.id)
        ORDER BY n.session_id = sessions.id DESC
        LIMIT 1),
    node_id = (
        SELECT n.id FROM nodes n
        WHERE n.kind IN ('goal', 'task') AND (n.session_id = sessions.id OR n.run_id || '.' || n.id = sessions.id)
        ORDER BY n.session_id = sessions.id DESC
        LIMIT 1)
WHERE EXISTS (
        SELECT 1 FROM nodes n
        WHERE n.kind IN ('goal', 'task') AND (n.session_id = sessions.id OR n.run_id || '.' || n.id = sessions.id));
