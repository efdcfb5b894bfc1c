-- Encryption at rest: the store's data keys, each wrapped by a key-encryption key (KEK)
-- that a key provider holds outside the database. A sealed value names its data key in
-- its own header, so no other table changes. The table is per store, not per run (like
-- schema_migrations): on Citus it is a reference table.
CREATE TABLE data_keys (
    key_id      text        PRIMARY KEY,
    kek_id      text        NOT NULL,
    cipher      text        NOT NULL,
    wrapped     bytea       NOT NULL,
    state       text        NOT NULL DEFAULT 'active'
                            CHECK (state IN ('active', 'retiring', 'retired')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
