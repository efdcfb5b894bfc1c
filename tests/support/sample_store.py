"""A store with runs of every shape, for the command line and inspector tests.

Everything is written through the public Store API, except rows that only other parts of
agentckpt write (effects, events, LangGraph's tables): those go through the command
line's own import queries, straight into the real database.
"""

from __future__ import annotations

import sqlite3
import uuid
from contextlib import closing
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

from agentckpt import SnapshotPolicy, Store
from agentckpt._backends.factory import parse_url
from agentckpt._core.writes import HistoryRow
from agentckpt.cli import main

SCRIPT = "<script>alert('pwned')</script>"
BIG_OUTPUT = ("weather report line\n" * 400).encode()
POLICY = SnapshotPolicy(interval=5, prune=False)
WHEN = "2025-03-15T10:00:02.250000+00:00"  # a time with milliseconds, as SQLite keeps


@dataclass
class Sample:
    """Ids of the sample runs."""

    conversation: uuid.UUID
    worker: uuid.UUID
    empty: uuid.UUID
    blob_digest: str


def conversation_state(turns: int, ref: dict[str, Any]) -> dict[str, Any]:
    """A conversation in the seed's format with tool calls, a blob and a hostile message."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"Weather in Berlin? {SCRIPT}"}]
    for turn in range(1, turns + 1):
        messages.append(
            {
                "role": "assistant",
                "content": f"Checking, turn {turn}.",
                "tool_calls": [
                    {
                        "tool_name": "get_weather",
                        "arguments": {"city": "Berlin", "turn": turn},
                        "result": ref if turn == 3 else {"temperature": 10 + turn},
                        "duration_ms": 340,
                    }
                ],
            }
        )
    return {
        "version": 2,
        "conversation": messages,
        "agent_config": {"model": "llama-3-70b", "temperature": 0.3},
        "tool_registry": ["get_weather", "search_web"],
        "big": 2**70,
        "nothing": None,
    }


def populate(url: str) -> Sample:
    """Three runs: a 12-turn conversation with everything, a finished worker, an empty run."""
    with Store.connect(url, policy=POLICY) as store:
        conv = store.create_run(
            agent_id="planner",
            kind="conversation",
            config={"model": "llama-3-70b", "tool_registry": ["get_weather", "search_web"]},
            metadata={"user_id": "user_abc123", "cost": 0.5},
        )
        ref, row = store.prepare_blob(BIG_OUTPUT)
        for turn in range(1, 13):
            store.commit(
                conv.run_id,
                conversation_state(turn, ref.to_json()),
                metadata={"input_tokens": 100 * turn},
                blobs=[row] if turn == 3 else [],
                history=(
                    [HistoryRow(seq=1, item_count=2, codec="json", payload=b"[1,2]", raw_bytes=5)]
                    if turn == 6
                    else []
                ),
            )
        worker = store.create_run(agent_id="worker", kind="run")
        for n in range(1, 4):
            store.commit(worker.run_id, {"n": n, "items": list(range(n))})
        store.set_status(worker.run_id, "completed")
        empty = store.create_run(agent_id="idle", kind="run")
        rid = conv.run_id
        writes = [
            (
                "ops_import_effect",
                {
                    "step": 4,
                    "key": "send_email",
                    "codec": "json",
                    "payload": b'{"ok":true}',
                    "created_at": WHEN,
                },
            ),
            (
                "ops_import_event",
                {
                    "event_id": str(uuid.uuid4()),
                    "step": 5,
                    "kind": "turn",
                    "codec": "json",
                    "payload": b"{}",
                    "created_at": WHEN,
                },
            ),
            ("ops_import_thread", {"thread_id": "thread-1", "namespace": ""}),
            (
                "ops_import_step_index",
                {
                    "checkpoint_id": "ckpt-0001",
                    "step": 12,
                    "parent_id": None,
                    "invocation_id": "inv-1",
                    "metadata": '{"source":"loop"}',
                },
            ),
            (
                "ops_import_step_write",
                {
                    "checkpoint_id": "ckpt-0001",
                    "task_id": "task-1",
                    "idx": 0,
                    "channel": "messages",
                    "task_path": "",
                    "type": "json",
                    "codec": "none",
                    "payload": b"[]",
                },
            ),
        ]
        for name, params in writes:
            store.backend.write(name, {"run_id": rid, **params})
    return Sample(conv.run_id, worker.run_id, empty.run_id, ref.digest)


def raw_sql(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """One statement on the store's database, ``?`` placeholders, committed."""
    target = parse_url(url)
    if target.dialect == "sqlite":
        with closing(sqlite3.connect(target.location)) as conn, conn:
            return conn.execute(sql, params).fetchall()
    options = f"-c search_path={target.settings['schema']}"
    with psycopg.connect(target.location, autocommit=True, options=options) as conn:
        cur = conn.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
        return cur.fetchall() if cur.description else []


def backdate(url: str, run_id: uuid.UUID, hours: int) -> None:
    """Make a run look idle for ``hours`` (its updated_at in the past)."""
    if parse_url(url).dialect == "sqlite":
        raw_sql(
            url,
            "UPDATE runs SET updated_at = strftime('%Y-%m-%dT%H:%M:%f', 'now', ?) WHERE run_id = ?",
            f"-{hours} hours",
            str(run_id),
        )
    else:
        raw_sql(
            url,
            "UPDATE runs SET updated_at = now() - make_interval(hours => ?) WHERE run_id = ?",
            hours,
            str(run_id),
        )


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run the command line in this process: ``(exit status, stdout, stderr)``."""
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse exits for usage errors and --help
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err
