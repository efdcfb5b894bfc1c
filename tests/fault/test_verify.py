"""``agentckpt verify``: 200 SIGKILLs of a real agent process on each backend, checked
for lost, mismatched and duplicated effects, in a scratch space removed afterwards."""

from __future__ import annotations

import json
import time
from pathlib import Path

import psycopg
import pytest

from tests.support.sample_store import cli

pytestmark = [pytest.mark.fault, pytest.mark.timeout(240)]

KILLS = 200


def verify(capsys: pytest.CaptureFixture[str], url: str) -> tuple[int, dict[str, object]]:
    started = time.monotonic()
    code, out, err = cli(capsys, "verify", url, "--kills", str(KILLS), "--json", "--seed", "7")
    report = json.loads(out)
    print(f"verify {report['dialect']}: {report} ({time.monotonic() - started:.1f} s)")
    assert not err.strip() or "error" not in err, err
    return code, report


def check(code: int, report: dict[str, object]) -> None:
    assert report["kills"] == KILLS
    assert report["agent_errors"] == []
    assert isinstance(report["acknowledged"], int)
    assert report["acknowledged"] > KILLS
    assert (report["lost"], report["mismatched"], report["duplicated"]) == (0, 0, 0)
    assert report["ok"] is True
    assert code == 0


def test_verify_on_sqlite(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, report = verify(capsys, f"sqlite:///{tmp_path}/store.db")
    check(code, report)
    # The scratch file (beside the store's, same disk) is gone; the store was not touched.
    assert list(tmp_path.iterdir()) == []


@pytest.mark.postgres
def test_verify_on_postgres(capsys: pytest.CaptureFixture[str], pg_url: str) -> None:
    code, report = verify(capsys, pg_url)
    check(code, report)
    scratch = str(report["scratch"])
    assert scratch.startswith("agentckpt_verify_")
    with psycopg.connect(pg_url.split("?")[0]) as conn:
        left = conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'agentckpt_verify_%'"
        ).fetchall()
        kept = conn.execute("SELECT to_regclass('agentckpt.runs') IS NOT NULL").fetchone()
    assert (scratch,) not in left
    assert kept == (True,)  # the store's own schema is untouched


def test_verify_refuses_an_in_memory_store(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "verify", "sqlite:///:memory:", "--kills", "1")
    assert code == 1
    assert "in-memory" in err
