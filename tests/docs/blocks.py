"""The fenced code blocks of README.md and docs/*.md, and the markers that say how to run them.

Every ```python (or ```py) block runs in a subprocess of its own; every ```bash, ```sh,
```shell or ```console block (for console: the ``$ `` lines) runs with ``bash -e -o
pipefail``, with shell variables and the current directory carried from the page's
earlier shell blocks, as in one terminal. A page's blocks run in order, in one empty
directory of their own. Other languages (json, text, ...) are not run.

A block that needs something runs with a marker: an HTML comment (invisible on the
rendered page) on the line right above its fence::

    <!-- doc-test: postgres setup=langgraph-savers sub="postgresql://db/app=>{pg_url}" -->

``skip="reason"``
    the block is not run; the reason is required (say it in the page's text too when a
    reader would need it, such as an API key).
``setup=NAME[,NAME]``
    Python from :data:`tests.docs.fixtures.SETUPS` runs first, in its own subprocess in
    the page's directory (files, databases the block reads).
``prelude=NAME[,NAME]``
    Python from :data:`tests.docs.fixtures.PRELUDES` is prepended to a Python block (the
    names a fragment uses, such as a LangGraph ``builder``).
``async``
    the Python block is the body of an ``async def``, run with ``asyncio.run`` (for a
    fragment with a top-level ``async with`` or ``await``).
``sub="OLD=>NEW"`` (repeatable)
    replace OLD by NEW in the block before it runs: a server's address by the test's.
``postgres``
    the block needs the test's PostgreSQL: ``{pg_url}`` (a migrated store URL) and
    ``{pg_dsn}`` (the same database as a libpq URL) in ``sub`` and ``env``, and the
    ``DOC_TEST_PG_URL``/``DOC_TEST_PG_DSN`` environment variables, name it.
``env=NAME=VALUE`` (repeatable)
    an environment variable for the block (and its setups).
``cwd=repo``
    run in the repository root instead of the page's directory (``python examples/...``).
``timeout=SECONDS``
    instead of 120.

A block without a marker must run as it is. A marker with an unknown key, a ``skip``
without a reason, or a marker that is not right above a fence fails the test.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON = frozenset({"python", "py"})
SHELL = frozenset({"bash", "sh", "shell", "console"})
KEYS = frozenset({"skip", "setup", "prelude", "async", "sub", "postgres", "env", "cwd", "timeout"})

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>```+|~~~+)\s*(?P<info>[^`\s]*)[^`]*$")
_MARKER = re.compile(r"^\s*<!--\s*doc-test:(?P<body>.*?)-->\s*$")


class MarkerError(Exception):
    """A marker that cannot be understood: the test fails naming the page and line."""


@dataclass
class Block:
    """One fenced block: where it is, its language and code, and its marker's settings."""

    page: str
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    skip: str | None = None
    setups: list[str] = field(default_factory=list)
    preludes: list[str] = field(default_factory=list)
    is_async: bool = False
    subs: list[tuple[str, str]] = field(default_factory=list)
    postgres: bool = False
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    timeout: float = 120.0

    @property
    def where(self) -> str:
        """``docs/cli.md:42`` (the opening fence)."""
        return f"{self.page}:{self.line}"

    @property
    def runnable(self) -> bool:
        """Python or shell: a block the test runs (or must see marked skip)."""
        return self.language in PYTHON | SHELL

    def apply(self, marker: str, where: str) -> None:
        """Take the settings of a marker's body (``key=value`` words, shell-quoted)."""
        try:
            words = shlex.split(marker)
        except ValueError as exc:
            raise MarkerError(f"{where}: doc-test marker: {exc}") from None
        for word in words:
            key, _, value = word.partition("=")
            if key not in KEYS:
                raise MarkerError(
                    f"{where}: doc-test marker: unknown key {key!r} (known: {sorted(KEYS)})"
                )
            if key == "skip":
                if not value.strip():
                    raise MarkerError(f'{where}: doc-test marker: skip needs a reason: skip="..."')
                self.skip = value
            elif key == "setup":
                self.setups += value.split(",")
            elif key == "prelude":
                self.preludes += value.split(",")
            elif key == "async":
                self.is_async = True
            elif key == "postgres":
                self.postgres = True
            elif key == "sub":
                old, arrow, new = value.partition("=>")
                if not arrow or not old:
                    raise MarkerError(f'{where}: doc-test marker: sub="OLD=>NEW", got {value!r}')
                self.subs.append((old, new))
            elif key == "env":
                name, eq, setting = value.partition("=")
                if not eq or not name:
                    raise MarkerError(f"{where}: doc-test marker: env=NAME=VALUE, got {value!r}")
                self.env[name] = setting
            elif key == "cwd":
                if value != "repo":
                    raise MarkerError(f"{where}: doc-test marker: cwd=repo is the only choice")
                self.cwd = value
            elif key == "timeout":
                self.timeout = float(value)


def pages() -> list[Path]:
    """README.md and every page of docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def parse(path: Path) -> list[Block]:
    """The fenced blocks of a page, each with the marker right above it applied."""
    page = str(path.relative_to(ROOT))
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    pending: tuple[int, str] | None = None  # a marker waiting for its fence
    index = 0
    while index < len(lines):
        text = lines[index]
        marker = _MARKER.match(text)
        fence = _FENCE.match(text)
        if marker:
            if pending is not None:
                raise MarkerError(f"{page}:{pending[0]}: doc-test marker not right above a fence")
            pending = (index + 1, marker["body"])
        elif fence:
            opening = fence["fence"]
            body: list[str] = []
            index += 1
            while index < len(lines) and not lines[index].strip().startswith(opening):
                body.append(lines[index])
                index += 1
            block = Block(page, index - len(body), fence["info"].lower(), "\n".join(body) + "\n")
            if pending is not None:
                if not block.runnable:
                    raise MarkerError(
                        f"{page}:{pending[0]}: doc-test marker above a {block.language or 'plain'}"
                        " block, which is never run"
                    )
                block.apply(pending[1], f"{page}:{pending[0]}")
                pending = None
            blocks.append(block)
        elif pending is not None and text.strip():
            raise MarkerError(f"{page}:{pending[0]}: doc-test marker not right above a fence")
        index += 1
    if pending is not None:
        raise MarkerError(f"{page}:{pending[0]}: doc-test marker not right above a fence")
    return blocks


def shell_commands(block: Block) -> str:
    """The commands of a shell block: for ``console``, the ``$ `` lines without output."""
    if block.language != "console":
        return block.code
    return "\n".join(line[2:] for line in block.code.splitlines() if line.startswith("$ ")) + "\n"
