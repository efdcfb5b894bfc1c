-- Checkpoints that a framework names by its own ids (LangGraph's checkpoint ids), kept as
-- steps of runs. One run stores one thread and namespace, so consecutive checkpoints of a
-- thread are consecutive steps of one run and are stored as small deltas.
--
-- run_threads: the thread and namespace each such run stores.
-- step_index:  an external checkpoint id -> the step that stores it, with its parent id,
--              the invocation that wrote it and its metadata (exact JSON text: JSONB would
--              reorder keys and refuse U+0000; filters run in Python).
-- step_writes: writes pending against a checkpoint (LangGraph's put_writes), serialized by
--              the framework's own serializer and compressed.
-- A checkpoint is visible only when its index row and its step both exist, so each writer
-- commits the step first and the index row second.

CREATE TABLE run_threads (
    run_id     uuid PRIMARY KEY,
    thread_id  text NOT NULL,
    namespace  text NOT NULL
);

CREATE INDEX run_threads_thread ON run_threads (thread_id);

CREATE TABLE step_index (
    run_id         uuid   NOT NULL,
    -- "C": checkpoint ids sort by code point, as LangGraph compares them in Python.
    checkpoint_id  text   COLLATE "C" NOT NULL,
    step           bigint NOT NULL,
    parent_id      text,
    invocation_id  text,
    metadata       text   NOT NULL,
    PRIMARY KEY (run_id, checkpoint_id)
);

CREATE INDEX step_index_invocation ON step_index (invocation_id)
    WHERE invocation_id IS NOT NULL;

CREATE TABLE step_writes (
    run_id         uuid    NOT NULL,
    checkpoint_id  text    COLLATE "C" NOT NULL,
    task_id        text    NOT NULL,
    idx            integer NOT NULL,
    channel        text    NOT NULL,
    task_path      text    NOT NULL,
    type           text    NOT NULL,
    codec          text    NOT NULL,
    payload        bytea   NOT NULL,
    PRIMARY KEY (run_id, checkpoint_id, task_id, idx)
);
