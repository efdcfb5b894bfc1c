-- Encryption at rest: the store's data keys, each wrapped by a key-encryption key (KEK)
-- that a key provider holds outside the database (see the PostgreSQL migration 0009).
CREATE TABLE data_keys (
    key_id      TEXT    PRIMARY KEY,
    kek_id      TEXT    NOT NULL,
    cipher      TEXT    NOT NULL,
    wrapped     BLOB    NOT NULL,
    state       TEXT    NOT NULL DEFAULT 'active'
                        CHECK (state IN ('active', 'retiring', 'retired')),
    created_at  TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now')),
    updated_at  TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now'))
);
