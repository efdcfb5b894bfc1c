"""Real multi-node PostgreSQL setups for the tests: Citus, PgBouncer, replicas, full disks."""
