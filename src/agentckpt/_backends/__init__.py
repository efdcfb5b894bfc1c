"""Database backends: thin drivers that run named SQL and translate driver errors.

No checkpoint logic lives here; the store decides what to write and backends write it.
"""
