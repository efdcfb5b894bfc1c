"""The operator tools' named queries: ``sql/<dialect>/ops.sql``.

Code refers to a query only through these constants; a test checks that each one
exists in every dialect.
"""

from __future__ import annotations

from typing import Final

RUN_LISTING: Final = "ops_run_listing"
TABLE_SIZES: Final = "ops_table_sizes"
DATABASE_SIZE: Final = "ops_database_size"
DURABILITY: Final = "ops_durability"
REPLICATION: Final = "ops_replication"
DROP_VERIFY_SCHEMA: Final = "ops_drop_verify_schema"
EXPORT_RUN: Final = "ops_export_run"
EXPORT_STEPS: Final = "ops_export_steps"
EXPORT_BLOBS: Final = "ops_export_blobs"
EXPORT_HISTORY: Final = "ops_export_history"
EXPORT_EFFECTS: Final = "ops_export_effects"
EXPORT_EVENTS: Final = "ops_export_events"
IMPORT_RUN: Final = "ops_import_run"
IMPORT_STEP: Final = "ops_import_step"
IMPORT_BLOB: Final = "ops_import_blob"
IMPORT_HISTORY: Final = "ops_import_history"
IMPORT_EFFECT: Final = "ops_import_effect"
IMPORT_EVENT: Final = "ops_import_event"
EXPORT_THREADS: Final = "ops_export_threads"
EXPORT_STEP_INDEX: Final = "ops_export_step_index"
EXPORT_STEP_WRITES: Final = "ops_export_step_writes"
IMPORT_THREAD: Final = "ops_import_thread"
IMPORT_STEP_INDEX: Final = "ops_import_step_index"
IMPORT_STEP_WRITE: Final = "ops_import_step_write"
TABLE_BYTES: Final = "ops_table_bytes"
STATES_TO_UPGRADE: Final = "ops_states_to_upgrade"
RUN_PAGE: Final = "ops_run_page"
USAGE_BY_DAY: Final = "ops_usage_by_day"
STEPS_WINDOW: Final = "ops_steps_window"
METRICS_RUNS: Final = "ops_metrics_runs"
RETENTION_AGED: Final = "ops_retention_aged"
RETENTION_AGENTS: Final = "ops_retention_agents"
RETENTION_EXCESS: Final = "ops_retention_excess"
RETENTION_DELETE: Final = "ops_retention_delete"
RETENTION_HISTORY: Final = "ops_retention_history"
COST_RUNS: Final = "ops_cost_runs"
