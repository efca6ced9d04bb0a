-- The worker queue of a cluster run (arbor run --cluster); '' for a run
-- driven by the process that started it (every run made before 0002).
-- The reaper looks for running cluster runs.
ALTER TABLE runs ADD COLUMN queue TEXT NOT NULL DEFAULT '';
CREATE INDEX runs_cluster_running ON runs (queue) WHERE queue <> '' AND status = 'running';
