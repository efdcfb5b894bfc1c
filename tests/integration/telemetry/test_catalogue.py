"""docs/operations.md lists every span, metric and logger agentckpt emits."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from agentckpt.telemetry import LOGGERS, METRICS, SPANS

ROOT = Path(__file__).resolve().parents[3]
OPERATIONS = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
SRC = ROOT / "src" / "agentckpt"


def test_every_span_and_metric_is_documented() -> None:
    for name in [*SPANS, *(spec.name for spec in METRICS)]:
        assert f"`{name}`" in OPERATIONS, name


def test_every_logger_in_the_code_is_documented() -> None:
    used = set()
    for path in SRC.rglob("*.py"):
        used.update(re.findall(r'getLogger\("([\w.]+)"\)', path.read_text(encoding="utf-8")))
    assert used <= set(LOGGERS), used - set(LOGGERS)
    for name in used:
        assert f"`{name}`" in OPERATIONS, name


def test_every_span_name_used_in_the_code_is_in_the_catalogue() -> None:
    used = set()
    for path in SRC.rglob("*.py"):
        used.update(re.findall(r'"(agentckpt\.[a-z_]+(?:\.[a-z_]+)?)"', path.read_text("utf-8")))
    spans = {name for name in used if name in SPANS or name.split(".")[1] in {"commit_batch"}}
    assert spans <= set(SPANS)
    assert set(SPANS) <= used


def test_without_opentelemetry_installed_the_store_works_and_records_nothing(
    tmp_path: Path,
) -> None:
    code = f"""
import sys
sys.modules["opentelemetry"] = None  # as if opentelemetry-api were not installed
from agentckpt import Store
from agentckpt.telemetry import Telemetry
with Store.connect("sqlite:///{tmp_path}/x.db") as store:
    run = store.create_run()
    store.commit(run.run_id, {{"n": 1}})
    assert store.latest(run.run_id).state == {{"n": 1}}
    assert store.telemetry.tracer() is None and not store.telemetry.metering
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
