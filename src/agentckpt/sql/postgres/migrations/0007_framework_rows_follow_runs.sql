-- The rows an integration keeps for a run (LangGraph's thread record, checkpoint index and
-- pending writes) reference the run and go with it: the store deletes a run without
-- knowing which integrations keep rows for it. Every key starts with run_id, so each
-- foreign key joins rows of one run, co-located on Citus and in one hash partition.
-- The store's own tables keep no foreign key: a check on every commit's insert would
-- cost the hot path a lookup for nothing (delete_run removes their rows itself).
-- Rows left without a run by a delete that crashed half-way under the old code go first.

DELETE FROM run_threads t WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_id = t.run_id);
DELETE FROM step_index i WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_id = i.run_id);
DELETE FROM step_writes w WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_id = w.run_id);

ALTER TABLE run_threads ADD CONSTRAINT run_threads_run
    FOREIGN KEY (run_id) REFERENCES runs (run_id) ON DELETE CASCADE;
ALTER TABLE step_index ADD CONSTRAINT step_index_run
    FOREIGN KEY (run_id) REFERENCES runs (run_id) ON DELETE CASCADE;
ALTER TABLE step_writes ADD CONSTRAINT step_writes_run
    FOREIGN KEY (run_id) REFERENCES runs (run_id) ON DELETE CASCADE;
