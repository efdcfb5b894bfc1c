"""The one list of tenant-scoped tables: every agentckpt table that holds rows of a run.

Each has a ``tenant_id`` column; on PostgreSQL each has row-level security enabled and
forced with the ``tenant_isolation`` policy (:mod:`agentckpt.tenancy.policies`). A new
table that holds run rows is one more line here, plus its migration; the tests
(tests/integration/tenancy) fail when a table of the schema is missing from this list
or lacks its column or policy.
"""

from __future__ import annotations

from typing import Final

__all__ = ["TENANT_TABLES", "UNSCOPED_TABLES"]

TENANT_TABLES: Final[tuple[str, ...]] = (
    "runs",
    "steps",
    "blobs",
    "effects",
    "history",
    "events",
    "run_threads",
    "step_index",
    "step_writes",
)
# Tables with no run rows, shared by every tenant: the migrations bookkeeping and the
# store's wrapped data keys (agentckpt.crypto; useless without the key-encryption key,
# and one set of data keys serves every tenant of the store).
UNSCOPED_TABLES: Final[tuple[str, ...]] = ("schema_migrations", "data_keys")
