-- history: archived parts of a run's state (old conversation turns), written in the same
-- transaction as the step that removes them from the hot state.
-- events: an optional append-only audit log of raw step events, written off the hot path.

CREATE TABLE history (
    run_id      TEXT    NOT NULL,
    seq         INTEGER NOT NULL,
    step        INTEGER NOT NULL,
    item_count  INTEGER NOT NULL,
    codec       TEXT    NOT NULL,
    payload     BLOB    NOT NULL,
    raw_bytes   INTEGER NOT NULL,
    created_at  TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now')),
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE events (
    run_id      TEXT    NOT NULL,
    event_id    TEXT    NOT NULL,
    step        INTEGER,
    kind        TEXT    NOT NULL,
    codec       TEXT    NOT NULL,
    payload     BLOB    NOT NULL,
    created_at  TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now')),
    PRIMARY KEY (run_id, event_id)
);
