-- The worker queue of a cluster run (arbor run --cluster); '' for a run
-- driven by the process that started it (every run made before 0012).
ALTER TABLE runs ADD COLUMN queue TEXT NOT NULL DEFAULT '';
