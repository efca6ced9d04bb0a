-- Nothing reads usage rows by session (a session's totals are kept on its
-- row), while every model call's insert paid for this index with a page
-- of its own in the step's commit.
DROP INDEX IF EXISTS usage_session;
