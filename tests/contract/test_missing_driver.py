"""Without the ``postgres`` extra, a PostgreSQL URL says what to install."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
sys.modules["psycopg"] = None  # as if the postgres extra were not installed
from agentckpt import ConfigurationError, Store
try:
    Store.connect("postgresql://127.0.0.1:1/x")
except ConfigurationError as exc:
    print(exc)
"""


def test_postgres_url_without_psycopg_names_the_extra() -> None:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "pip install 'agentckpt[postgres]'" in result.stdout


def test_cli_without_psycopg_prints_one_line() -> None:
    script = (
        "import sys; sys.modules['psycopg'] = None\n"
        "from agentckpt.cli import main\n"
        "raise SystemExit(main(['--url', 'postgresql://127.0.0.1:1/x', 'runs', 'list']))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "agentckpt[postgres]" in result.stderr
