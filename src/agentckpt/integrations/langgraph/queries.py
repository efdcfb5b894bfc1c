"""The LangGraph checkpointer's named queries: ``sql/<dialect>/langgraph.sql``.

Code refers to a query only through these constants; a test checks that each one
exists in every dialect.
"""

from __future__ import annotations

from typing import Final

OPEN_RUN: Final = "lg_open_run"
THREAD_RUNS: Final = "lg_thread_runs"
INDEX_PUT: Final = "lg_index_put"
INDEX_GET: Final = "lg_index_get"
INDEX_LATEST: Final = "lg_index_latest"
INDEX_PAGE_RUN: Final = "lg_index_page_run"
INDEX_PAGE: Final = "lg_index_page"
INDEX_ALL: Final = "lg_index_all"
RUN_INDEXED: Final = "lg_run_indexed"
WRITES_GET: Final = "lg_writes_get"
WRITES_INSERT: Final = "lg_writes_insert"
WRITES_REPLACE: Final = "lg_writes_replace"
COPY_WRITES: Final = "lg_copy_writes"
KEEP_ONLY: Final = "lg_keep_only"
DELETE_INVOCATIONS: Final = "lg_delete_invocations"
BLOBS_GET: Final = "lg_blobs_get"
