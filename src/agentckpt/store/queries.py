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
# Encryption at rest: data keys, and the pages and updates of a re-encryption.
LOAD_DATA_KEYS: Final = "load_data_keys"
INSERT_DATA_KEY: Final = "insert_data_key"
REWRAP_DATA_KEY: Final = "rewrap_data_key"
SET_DATA_KEY_STATE: Final = "set_data_key_state"
ROTATION_STEPS_PAGE: Final = "rotation_steps_page"
RESEAL_STEP: Final = "reseal_step"
ROTATION_BLOBS_PAGE: Final = "rotation_blobs_page"
RESEAL_BLOB: Final = "reseal_blob"
ROTATION_HISTORY_PAGE: Final = "rotation_history_page"
RESEAL_HISTORY: Final = "reseal_history"
ROTATION_EFFECTS_PAGE: Final = "rotation_effects_page"
RESEAL_EFFECT: Final = "reseal_effect"
RUNS_PAGE: Final = "runs_page"
RESEAL_RUN_CONFIG: Final = "reseal_run_config"
RESEAL_RUN_METADATA: Final = "reseal_run_metadata"
