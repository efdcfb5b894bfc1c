-- Checkpoints that a framework names by its own ids (LangGraph's checkpoint ids), kept as
-- steps of runs; the same shape as the PostgreSQL schema (see its 0003 for the why).
-- WITHOUT ROWID: rows are stored in primary-key order, so a run's index rows and writes
-- sit together and need no second b-tree.

CREATE TABLE run_threads (
    run_id     TEXT PRIMARY KEY,
    thread_id  TEXT NOT NULL,
    namespace  TEXT NOT NULL
) WITHOUT ROWID;

CREATE INDEX run_threads_thread ON run_threads (thread_id);

CREATE TABLE step_index (
    run_id         TEXT    NOT NULL,
    checkpoint_id  TEXT    NOT NULL,
    step           INTEGER NOT NULL,
    parent_id      TEXT,
    invocation_id  TEXT,
    metadata       TEXT    NOT NULL,
    PRIMARY KEY (run_id, checkpoint_id)
) WITHOUT ROWID;

CREATE INDEX step_index_invocation ON step_index (invocation_id)
    WHERE invocation_id IS NOT NULL;

CREATE TABLE step_writes (
    run_id         TEXT    NOT NULL,
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
