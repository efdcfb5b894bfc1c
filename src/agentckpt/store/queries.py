"""The store's named queries: ``sql/<dialect>/store.sql``.

Code refers to a query only through these constants; a test checks that each one
exists in every dialect.
"""

from __future__ import annotations

from typing import Final

INSERT_RUN: Final = "insert_run"
GET_RUN: Final = "get_run"
LIST_RUNS: Final = "list_runs"
SET_STATUS: Final = "set_status"
COMMIT_PROBE: Final = "commit_probe"
CONFIRM_COMMIT: Final = "confirm_commit"
LOAD_CHAIN: Final = "load_chain"
RESUME_RUN: Final = "resume_run"
LIST_STEPS: Final = "list_steps"
PRUNE_STEPS: Final = "prune_steps"
COPY_HISTORY: Final = "copy_history"
COPY_BLOBS: Final = "copy_blobs"
DELETE_RUN: Final = "delete_run"
INSERT_BLOB: Final = "insert_blob"
GET_BLOB: Final = "get_blob"
