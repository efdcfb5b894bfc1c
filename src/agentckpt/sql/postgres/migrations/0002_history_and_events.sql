-- history: archived parts of a run's state (old conversation turns), written in the same
-- transaction as the step that removes them from the hot state.
-- events: an optional append-only audit log of raw step events, written off the hot path.

CREATE TABLE history (
    run_id      uuid        NOT NULL,
    seq         bigint      NOT NULL,
    step        bigint      NOT NULL,
    item_count  integer     NOT NULL,
    codec       text        NOT NULL,
    payload     bytea       NOT NULL,
    raw_bytes   integer     NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE events (
    run_id      uuid        NOT NULL,
    event_id    uuid        NOT NULL,
    step        bigint,
    kind        text        NOT NULL,
    codec       text        NOT NULL,
    payload     bytea       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, event_id)
);
