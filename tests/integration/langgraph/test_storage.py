"""A messages-append graph stores far less with agentckpt than with LangGraph's PostgresSaver.

Same graph, same turns, same PostgreSQL server, fresh schemas; see storage_compare.py
(also runnable by hand for other sizes).
"""

from __future__ import annotations

import pytest

pytest.importorskip(
    "langgraph", reason="LangGraph is not installed: pip install 'agentckpt[langgraph]'"
)
pytest.importorskip(
    "langgraph.checkpoint.postgres",
    reason="the baseline is not installed: pip install langgraph-checkpoint-postgres",
)

from tests.integration.langgraph.storage_compare import compare


def test_messages_graph_is_smaller_than_langgraph_postgres_saver(pg_server_dsn: str) -> None:
    ours, theirs = compare(pg_server_dsn, turns=60)

    # Rows: LangGraph rewrites the whole message list on every checkpoint that changes
    # it; agentckpt stores a delta of the new message. On disk the fixed page and index
    # overhead of small tables narrows the gap, but agentckpt is still smaller.
    assert ours.row_bytes * 3 < theirs.row_bytes
    assert ours.disk_bytes < theirs.disk_bytes
