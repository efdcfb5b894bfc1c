"""The package a user installs: the wheel's files and metadata, and the wheel in a fresh venv.

The wheel is built from this tree (``pip wheel --no-deps``, hatchling from PyPI in pip's
isolated build environment) and installed into new virtual environments with only its
base dependencies (orjson, zstandard, from PyPI; pip's cache makes a rerun quick). There,
with none of the extras: the ``agentckpt`` command, the SQLite demo, ``agentckpt bench``
without the ``bench`` extra, and ``mypy --strict`` on a user's script against the
installed package. The same smoke subset runs under every CPython listed in the
classifiers that this machine has (``python3.12``, ``python3.13`` or pyenv's builds);
under ``CI=true`` a listed version that is missing fails instead of being skipped.

Deselect with ``-m 'not packaging'``; alone: ``python -m pytest tests/quality/test_packaging.py``.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Iterator
from email.parser import Parser
from pathlib import Path

import pytest

pytestmark = pytest.mark.packaging

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "agentckpt"
LISTED = ("3.11", "3.12", "3.13")  # pyproject's "Programming Language :: Python :: 3.x"
EXTRA_LINE = (
    "agentckpt bench needs the bench extra: pip install 'agentckpt[bench]' "
    "(missing: psycopg, psycopg_pool)"
)


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without this checkout on the import path (PYTHONPATH=src would
    hide what the wheel lacks) and without an outer virtual environment."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "MYPYPATH", "PYTHONHOME", "VIRTUAL_ENV", "AGENTCKPT_URL")
    }
    env.update(extra)
    return env


def run(
    *command: str | Path, cwd: Path, timeout: float = 180, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env or clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    done = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", ROOT, "-w", out, cwd=out)
    assert done.returncode == 0, done.stdout + done.stderr
    (built,) = out.glob("agentckpt-*.whl")
    return built


def wheel_names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def metadata(wheel: Path) -> tuple[str, dict[str, list[str]]]:
    """The wheel's METADATA as text, and its headers (each a list of values)."""
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        text = archive.read(name).decode()
    headers: dict[str, list[str]] = {}
    for key, value in Parser().parsestr(text).items():
        headers.setdefault(key, []).append(value)
    return text, headers


def test_the_wheel_holds_the_package_its_data_and_nothing_else(wheel: Path) -> None:
    names = set(wheel_names(wheel))
    assert "agentckpt/py.typed" in names
    dist_info = {n.split("/")[0] for n in names if ".dist-info/" in n}
    assert len(dist_info) == 1
    (info,) = dist_info
    assert f"{info}/licenses/LICENSE" in names
    # Every data file the code reads at run time: named SQL, the inspector's page parts.
    for folder in ("sql", "inspector/static", "inspector/templates"):
        expected = {
            "agentckpt/" + p.relative_to(PACKAGE).as_posix()
            for p in (PACKAGE / folder).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        }
        assert expected, folder
        assert expected <= names, sorted(expected - names)
    assert any(n.startswith("agentckpt/sql/postgres/migrations/") for n in names)
    assert any(n.startswith("agentckpt/sql/sqlite/migrations/") for n in names)
    package = {n for n in names if not n.startswith(info + "/")}
    assert all(n.startswith("agentckpt/") for n in package), sorted(package)
    assert not [n for n in names if n.startswith("tests/") or "/tests/" in n]
    stray = [
        n
        for n in package
        if not re.search(r"\.(py|sql|html|css|svg)$", n) and n != "agentckpt/py.typed"
    ]
    assert stray == []  # no caches, databases or editor files slip in


def test_the_wheel_metadata_tells_a_user_what_they_get(wheel: Path) -> None:
    text, headers = metadata(wheel)
    assert headers["License-Expression"] == ["MIT"]
    assert headers["Requires-Python"] == [">=3.11"]
    urls = {v.split(",")[0] for v in headers["Project-URL"]}
    assert urls == {"Homepage", "Documentation", "Changelog", "Issues"}
    assert all("https://github.com/agentckpt/agentckpt" in v for v in headers["Project-URL"])
    classifiers = headers["Classifier"]
    assert "Development Status :: 4 - Beta" in classifiers
    assert "Typing :: Typed" in classifiers
    listed = tuple(
        c.rsplit(" ", 1)[1] for c in classifiers if re.fullmatch(r".*Python :: 3\.\d+", c)
    )
    assert listed == LISTED  # the versions this module tests
    # The base install pulls in exactly two packages.
    base = [r for r in headers["Requires-Dist"] if "extra ==" not in r]
    assert sorted(base) == ["orjson>=3.10", "zstandard>=0.22"]
    # psycopg's advice for libraries: plain psycopg, the implementation left to the
    # application; `postgres-binary` and the benchmark (an application) pick the wheel.
    extras = set(headers["Provides-Extra"])
    assert {"postgres", "postgres-binary", "bench", "test"} <= extras

    def requires(extra: str) -> set[str]:
        marker = f"; extra == '{extra}'"
        return {r.removesuffix(marker) for r in headers["Requires-Dist"] if r.endswith(marker)}

    assert requires("postgres") == {"psycopg>=3.2", "psycopg-pool>=3.2"}
    assert "psycopg[binary]>=3.2" in requires("postgres-binary")
    assert "psycopg[binary]>=3.2" in requires("bench")
    assert requires("bench") <= requires("test")
    pins = {r.split("==")[0] for r in requires("test") if "==" in r}
    assert pins >= {"mypy", "ruff"}  # exact: lint and the generated-twin check reproduce
    assert "Crash-proof checkpoints" in text  # the README is the long description


# -- a fresh virtual environment per listed interpreter ----------------------------------


def interpreter(version: str) -> str | None:
    """A CPython ``version`` on this machine, or None."""
    if version == "{}.{}".format(*sys.version_info[:2]):
        return sys.executable
    candidates = [shutil.which(f"python{version}")]
    candidates += sorted(glob.glob(f"/root/.pyenv/versions/{version}.*/bin/python"))
    candidates += sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python")))
    for candidate in filter(None, candidates):
        probe = run(candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])", cwd=ROOT)
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return candidate
    return None


@pytest.fixture(scope="module", params=LISTED)
def venv(
    request: pytest.FixtureRequest, wheel: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """A new venv of the listed Python version with the wheel and its base dependencies."""
    version: str = request.param
    python = interpreter(version)
    if python is None:
        message = f"Python {version} is listed in pyproject's classifiers but not found here"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    where = tmp_path_factory.mktemp(f"venv-{version}")
    env = where / "env"
    # No pip inside (ensurepip alone takes seconds): this process's pip installs there.
    made = run(python, "-m", "venv", "--without-pip", env, cwd=where)
    assert made.returncode == 0, made.stderr
    installed = run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        env / "bin" / "python",
        "install",
        "-q",
        "--no-compile",
        wheel,
        cwd=where,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    try:
        yield env
    finally:
        shutil.rmtree(where, ignore_errors=True)


def site_packages(env: Path) -> Path:
    (found,) = env.glob("lib/python3.*/site-packages")
    return found


def test_the_venv_has_the_base_install_only(venv: Path) -> None:
    done = run(
        venv / "bin" / "python",
        "-c",
        "import importlib.util as u, agentckpt; print(agentckpt.__file__); "
        "print([m for m in ('psycopg', 'psycopg_pool', 'langgraph', 'boto3', 'agents') "
        "if u.find_spec(m)])",
        cwd=venv,
    )
    assert done.returncode == 0, done.stderr
    where, extras = done.stdout.splitlines()
    assert Path(where).is_relative_to(site_packages(venv))  # the wheel, not this checkout
    assert extras == "[]"
    assert (site_packages(venv) / "agentckpt" / "py.typed").exists()


def test_the_command_and_the_sqlite_demo_run(venv: Path, tmp_path: Path) -> None:
    command = venv / "bin" / "agentckpt"
    shown = run(command, "--help", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "usage: agentckpt" in shown.stdout
    assert "bench" in shown.stdout
    demo = run(command, "demo", "--steps", "12", "--kill-at", "7", "--think", "0.01", cwd=tmp_path)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "Traceback" not in demo.stderr
    assert (tmp_path / "agentckpt-demo.db").exists()


def test_bench_without_its_extra_says_which_to_install(venv: Path, tmp_path: Path) -> None:
    command = venv / "bin" / "agentckpt"
    shown = run(command, "bench", "--help", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("usage: agentckpt bench")
    assert "--quick" in shown.stdout
    for how in ([command, "bench"], [venv / "bin" / "python", "-m", "agentckpt.bench"]):
        attempt = run(*how, "--quick", "--backend", "sqlite", cwd=tmp_path)
        assert attempt.returncode == 2
        assert attempt.stdout == ""
        assert attempt.stderr == EXTRA_LINE + "\n"  # one line, no traceback


USER_SCRIPT = '''
"""A user's script: every result lands in an annotated name or a typed return."""

from __future__ import annotations

import sys
from typing import Any
from uuid import UUID

from agentckpt import (
    AgentckptError,
    AgentRun,
    Checkpoint,
    ConfigurationError,
    Conversations,
    RunInfo,
    StepConflictError,
    StepInfo,
    Store,
)
from agentckpt.conversation import Message
from agentckpt.runs import RunResult, StepContext


# A typed return of each call: under --strict (warn_return_any) an Any leaking from the
# package would fail here, and a missing py.typed fails the imports (import-untyped).
def open_store(url: str) -> Store:
    return Store.connect(url)


def latest(store: Store, run_id: UUID) -> Checkpoint | None:
    return store.latest(run_id)


def messages(conversations: Conversations, conversation_id: UUID) -> list[Message]:
    return conversations.recover(
        conversation_id, agent_config={"model": "m", "temperature": 0.2}, tools=["search"]
    ).messages


def step(ctx: StepContext) -> dict[str, Any]:
    state: dict[str, Any] = ctx.state
    state["notes"].append(ctx.step)
    return state


def main(url: str) -> None:
    with open_store(url) as store:
        run: RunInfo = store.create_run(agent_id="planner")
        info: StepInfo = store.commit(run.run_id, {"messages": ["hi"]})
        head: int = info.step
        found = latest(store, run.run_id)
        assert found is not None and found.step == head
        try:
            store.commit(run.run_id, {"messages": ["other"]}, step=head)
        except StepConflictError as exc:
            error: AgentckptError = exc
            print(type(error).__name__)

        conversations = Conversations(store)
        conversation = conversations.start(
            agent_id="weather", agent_config={"model": "m", "temperature": 0.2}, tools=["search"]
        )
        asked: StepInfo = conversation.add_user_message("Weather in Berlin?")
        answered: StepInfo | None = conversation.add_assistant_message("Cloudy.")
        assert answered is not None and answered.run_id == asked.run_id
        print([m.role for m in messages(conversations, conversation.conversation_id)])

        agent = AgentRun(store, agent_id="loop", initial_state={"notes": []})
        result: RunResult = agent.run(step, max_steps=3)
        status: str = result.status
        print(status, result.step)
    try:
        Store.connect("nosuch://x")
    except ConfigurationError as exc:
        print(type(exc).__name__)


if __name__ == "__main__":
    main(sys.argv[1])
'''


def test_a_user_script_type_checks_strictly_and_runs(venv: Path, tmp_path: Path) -> None:
    script = tmp_path / "user_app.py"
    script.write_text(textwrap.dedent(USER_SCRIPT))
    # And a wrong annotation, in the same mypy run: proof that the types were read.
    wrong = tmp_path / "wrong.py"
    wrong.write_text(
        "from agentckpt import Store\n\nstore: int = Store.connect('sqlite:///x.db')\n"
    )
    python = venv / "bin" / "python"
    checked = run(
        sys.executable,
        "-m",
        "mypy",
        "--strict",
        "--no-incremental",
        "--python-executable",
        python,
        script,
        wrong,
        cwd=tmp_path,
    )
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    assert errors == [
        'wrong.py:3: error: Incompatible types in assignment (expression has type "Store", '
        'variable has type "int")  [assignment]'
    ], checked.stdout + checked.stderr
    ran = run(python, script, f"sqlite:///{tmp_path / 'app.db'}", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split("\n")[:-1] == [
        "StepConflictError",
        "['user', 'assistant']",
        "completed 3",
        "ConfigurationError",
    ]


# -- the PostgreSQL driver: the missing-driver message stays true ---------------------------

NO_LIBPQ = """
import ctypes.util, sys
sys.modules["psycopg_binary"] = None  # no psycopg[binary] ...
sys.modules["psycopg_c"] = None  # ... nor psycopg[c]
ctypes.util.find_library = lambda name: None  # ... and no libpq on the machine
from agentckpt import ConfigurationError, Store
try:
    Store.connect("postgresql://127.0.0.1:1/x")
except ConfigurationError as exc:
    print(exc)
"""


def test_plain_psycopg_without_libpq_says_how_to_get_one() -> None:
    # The `postgres` extra installs plain psycopg; where libpq is absent it cannot load.
    pytest.importorskip("psycopg")
    done = run(sys.executable, "-c", NO_LIBPQ, cwd=ROOT, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip()
    assert line.startswith("psycopg cannot load (no pq wrapper available)")
    assert "libpq" in line
    assert "pip install 'agentckpt[postgres-binary]'" in line
    assert "\n" not in line
