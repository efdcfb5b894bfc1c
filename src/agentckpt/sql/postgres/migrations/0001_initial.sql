-- Runs, their steps, blobs and effects. Every primary key starts with run_id so the
-- schema stays valid under PARTITION BY HASH (run_id) and on Citus (run_id distributed).
-- There are no foreign keys between runs: a run's rows live and die together.

CREATE TABLE runs (
    run_id            uuid        PRIMARY KEY,
    kind              text        NOT NULL DEFAULT 'run',
    agent_id          text        NOT NULL DEFAULT '',
    status            text        NOT NULL DEFAULT 'active',
    head_step         bigint,
    head_version      integer     NOT NULL DEFAULT 0,
    head_open         boolean     NOT NULL DEFAULT false,
    snapshot_step     bigint,
    chain_bytes       bigint      NOT NULL DEFAULT 0,
    lease_owner       text,
    lease_expires_at  timestamptz,
    lease_epoch       bigint      NOT NULL DEFAULT 0,
    heartbeat_at      timestamptz NOT NULL DEFAULT now(),
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    parent_run_id     uuid,
    parent_step       bigint,
    config            bytea       NOT NULL,
    metadata          jsonb       NOT NULL DEFAULT '{}',
    error             text
);

CREATE INDEX runs_agent_updated ON runs (agent_id, updated_at);
CREATE INDEX runs_status_heartbeat ON runs (status, heartbeat_at);

CREATE TABLE steps (
    run_id         uuid        NOT NULL,
    step           bigint      NOT NULL,
    parent_step    bigint,
    kind           text        NOT NULL CHECK (kind IN ('snapshot', 'delta')),
    is_open        boolean     NOT NULL DEFAULT false,
    codec          text        NOT NULL,
    payload        bytea       NOT NULL,
    state_version  integer     NOT NULL DEFAULT 1,
    write_version  integer     NOT NULL DEFAULT 1,
    raw_bytes      integer     NOT NULL,
    state_bytes    bigint      NOT NULL,
    checksum       bytea       NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, step)
);

CREATE TABLE blobs (
    run_id      uuid        NOT NULL,
    digest      text        NOT NULL,
    codec       text        NOT NULL,
    size        bigint      NOT NULL,
    data        bytea       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, digest)
);

CREATE TABLE effects (
    run_id      uuid        NOT NULL,
    step        bigint      NOT NULL,
    key         text        NOT NULL,
    codec       text        NOT NULL,
    payload     bytea       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, step, key)
);
