-- The rows an integration keeps for a run reference the run and go with it (see the
-- PostgreSQL migration 0007 for the why). SQLite cannot add a foreign key to a table, so
-- each table is rebuilt with it; rows whose run is gone are not copied.

CREATE TABLE run_threads_new (
    run_id     TEXT PRIMARY KEY REFERENCES runs (run_id) ON DELETE CASCADE,
    thread_id  TEXT NOT NULL,
    namespace  TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO run_threads_new SELECT * FROM run_threads
WHERE run_id IN (SELECT run_id FROM runs);
DROP TABLE run_threads;
ALTER TABLE run_threads_new RENAME TO run_threads;
CREATE INDEX run_threads_thread ON run_threads (thread_id);

CREATE TABLE step_index_new (
    run_id         TEXT    NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    checkpoint_id  TEXT    NOT NULL,
    step           INTEGER NOT NULL,
    parent_id      TEXT,
    invocation_id  TEXT,
    metadata       TEXT    NOT NULL,
    PRIMARY KEY (run_id, checkpoint_id)
) WITHOUT ROWID;
INSERT INTO step_index_new SELECT * FROM step_index
WHERE run_id IN (SELECT run_id FROM runs);
DROP TABLE step_index;
ALTER TABLE step_index_new RENAME TO step_index;
CREATE INDEX step_index_invocation ON step_index (invocation_id)
    WHERE invocation_id IS NOT NULL;

CREATE TABLE step_writes_new (
    run_id         TEXT    NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    checkpoint_id  TEXT    NOT NULL,
    task_id        TEXT    NOT NULL,
    idx            INTEGER NOT NULL,
    channel        TEXT    NOT NULL,
    task_path      TEXT    NOT NULL,
    type           TEXT    NOT NULL,
    codec          TEXT    NOT NULL,
    payload        BLOB    NOT NULL,
    PRIMARY KEY (run_id, checkpoint_id, task_id, idx)
) WITHOUT ROWID;
INSERT INTO step_writes_new SELECT * FROM step_writes
WHERE run_id IN (SELECT run_id FROM runs);
DROP TABLE step_writes;
ALTER TABLE step_writes_new RENAME TO step_writes;
