"""Every Python and shell block of README.md and docs/*.md runs as written, page by page.

How blocks run and how a block that needs something is marked: :mod:`tests.docs.blocks`.
A new block on any page is picked up; one that cannot run here fails this test until it
runs or carries ``<!-- doc-test: skip="why" -->`` on the line above its fence.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentckpt.cli.doctor import filesystem_type
from agentckpt.cli.durability import NETWORK_FILESYSTEMS, RAM_FILESYSTEMS
from tests.docs.blocks import (
    PYTHON,
    ROOT,
    Block,
    MarkerError,
    pages,
    parse,
    shell_commands,
)
from tests.docs.fixtures import PRELUDES, SETUPS

HOW_TO_MARK = (
    "if this block cannot run as written in the test, make it run, or give it a setup, "
    "a prelude or a substitution, or mark it not run with a reason: "
    '<!-- doc-test: skip="why" --> on the line above its fence (see tests/docs/blocks.py)'
)

# Carries a page's shell variables and directory from one block to the next: the block
# runs under `set -e`, so this epilogue runs only if every command succeeded.
_SAVE_STATE = r"""
{
  for __doc_v in $(compgen -v); do
    case "$__doc_v" in
      __doc_*|BASH*|FUNCNAME|PIPESTATUS|_|COMP_*|OPT*|LINENO|RANDOM|SRANDOM|SECONDS|EPOCH*|\
      PWD|OLDPWD|SHLVL|PPID|UID|EUID|GROUPS|HOSTNAME|HOSTTYPE|MACHTYPE|OSTYPE|SHELLOPTS|\
      IFS|PS1|PS2|PS4|HISTCMD|DIRSTACK|COLUMNS|LINES) continue ;;
    esac
    if printf '%s\n' "$__doc_baseline" | grep -qxF "$__doc_v"; then continue; fi
    declare -p "$__doc_v" 2>/dev/null | grep -v '^declare -[a-zA-Z]*r' || true
  done
  printf 'cd %q\n' "$PWD"
} > "$__DOC_STATE.new"
mv "$__DOC_STATE.new" "$__DOC_STATE"
"""


def _page_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _marks(path: Path) -> list[pytest.MarkDecorator]:
    text = path.read_text(encoding="utf-8")
    return [pytest.mark.crash] if "agentckpt demo" in text else []


PAGES = [pytest.param(p, id=_page_id(p), marks=_marks(p)) for p in pages()]


class Page:
    """One page's run: its directory, its environment, its shell state."""

    def __init__(self, tmp_path: Path, request: pytest.FixtureRequest) -> None:
        self.request = request
        self.work = tmp_path / "work"
        self.work.mkdir()
        self.scratch = tmp_path / "scratch"  # outside the page's directory
        self.scratch.mkdir()
        shims = self.scratch / "bin"
        shims.mkdir()
        for command, module in (("agentckpt", "-m agentckpt"), ("python", ""), ("python3", "")):
            shim = shims / command
            shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" {module} "$@"\n')
            shim.chmod(0o755)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTCKPT_")}
        self.env["PATH"] = f"{shims}{os.pathsep}{self.env.get('PATH', '')}"
        python_path = [str(ROOT / "src"), *filter(None, [self.env.get("PYTHONPATH")])]
        self.env["PYTHONPATH"] = os.pathsep.join(python_path)
        self.state = self.scratch / "shell-state.sh"
        self.placeholders: dict[str, str] = {}

    def postgres(self) -> None:
        if not self.placeholders:
            url = str(self.request.getfixturevalue("pg_url"))
            self.placeholders = {"{pg_url}": url, "{pg_dsn}": url.split("?")[0]}

    def expand(self, text: str) -> str:
        for name, value in self.placeholders.items():
            text = text.replace(name, value)
        return text

    def run(self, block: Block) -> None:
        if block.postgres:
            self.postgres()
        env = dict(self.env)
        if block.postgres:
            env["DOC_TEST_PG_URL"] = self.placeholders["{pg_url}"]
            env["DOC_TEST_PG_DSN"] = self.placeholders["{pg_dsn}"]
        env.update({name: self.expand(value) for name, value in block.env.items()})
        cwd = ROOT if block.cwd == "repo" else self.work
        for name in block.setups:
            if name not in SETUPS:
                pytest.fail(f"{block.where}: unknown setup {name!r} (known: {sorted(SETUPS)})")
            self.execute(block, [sys.executable, "-c", SETUPS[name]], env, cwd, f"setup {name}")
        code = block.code
        for old, new in block.subs:
            if old not in code:
                pytest.fail(f"{block.where}: sub {old!r} is not in the block")
            code = code.replace(old, self.expand(new))
        if block.language in PYTHON:
            argv = [sys.executable, str(self.python_file(block, code))]
        else:
            argv = ["bash", "-e", "-o", "pipefail", str(self.shell_file(block, code))]
        self.execute(block, argv, env, cwd, "the block")

    def python_file(self, block: Block, code: str) -> Path:
        for name in block.preludes:
            if name not in PRELUDES:
                pytest.fail(f"{block.where}: unknown prelude {name!r} (known: {sorted(PRELUDES)})")
        if block.is_async:
            code = (
                "import asyncio\n\n\nasync def __doc_main():\n"
                + textwrap.indent(code, "    ")
                + "\n\nasyncio.run(__doc_main())\n"
            )
        preludes = "".join(PRELUDES[name] + "\n" for name in block.preludes)
        path = self.scratch / f"{block.page.replace('/', '_')}-line{block.line}.py"
        path.write_text(preludes + code, encoding="utf-8")
        return path

    def shell_file(self, block: Block, code: str) -> Path:
        path = self.scratch / f"{block.page.replace('/', '_')}-line{block.line}.sh"
        commands = shell_commands(Block(block.page, block.line, block.language, code))
        path.write_text(
            "__doc_baseline=$(compgen -v)\n"
            f'__DOC_STATE="{self.state}"\n'
            'if [ -f "$__DOC_STATE" ]; then source "$__DOC_STATE"; fi\n' + commands + _SAVE_STATE,
            encoding="utf-8",
        )
        return path

    def execute(
        self, block: Block, argv: list[str], env: dict[str, str], cwd: Path, what: str
    ) -> None:
        try:
            done = subprocess.run(
                argv,
                cwd=cwd,
                env=env,
                capture_output=True,
                text=True,
                timeout=block.timeout,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"{block.where}: {what} ran over {block.timeout:.0f} s; {HOW_TO_MARK}")
        if done.returncode != 0 or "Traceback (most recent call last)" in done.stderr:
            pytest.fail(
                f"{block.where} ({block.language}): {what} failed with exit status "
                f"{done.returncode}\n--- block ---\n{block.code}--- stdout ---\n{done.stdout}"
                f"--- stderr ---\n{done.stderr}\n{HOW_TO_MARK}",
                pytrace=False,
            )


@pytest.mark.parametrize("path", PAGES)
def test_every_block_of_the_page_runs(
    path: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    blocks = [b for b in parse(path) if b.runnable and b.skip is None]
    if not blocks:
        pytest.skip(f"{_page_id(path)} has no Python or shell block to run")
    if "agentckpt doctor" in "".join(b.code for b in blocks) and (
        filesystem_type(tmp_path) in RAM_FILESYSTEMS | NETWORK_FILESYSTEMS
    ):
        pytest.skip("the temporary directory is not on a local disk: `doctor` would fail")
    page = Page(tmp_path, request)
    for block in blocks:
        page.run(block)


def test_the_pages_have_blocks_and_every_skip_gives_a_reason() -> None:
    blocks = [b for p in pages() for b in parse(p) if b.runnable]
    assert len(blocks) > 40
    skipped = [b for b in blocks if b.skip is not None]
    assert all(len(b.skip or "") >= 10 for b in skipped), [b.where for b in skipped]
    # Most blocks run: skipping is for what needs the network, a key, or runs forever.
    assert len(skipped) * 3 < len(blocks), [b.where for b in skipped]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('<!-- doc-test: skip="" -->\n```bash\nls\n```\n', "skip needs a reason"),
        ("<!-- doc-test: sikp=x -->\n```bash\nls\n```\n", "unknown key 'sikp'"),
        ("<!-- doc-test: async -->\n```json\n{}\n```\n", "never run"),
        ("<!-- doc-test: async -->\n\nSome text.\n```python\npass\n```\n", "not right above"),
        ("<!-- doc-test: async -->\n", "not right above"),
        ('<!-- doc-test: sub="a" -->\n```bash\nls\n```\n', "OLD=>NEW"),
    ],
)
def test_a_bad_marker_fails_naming_the_page_and_line(
    tmp_path: Path, text: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tests.docs.blocks.ROOT", tmp_path)
    page = tmp_path / "page.md"
    page.write_text("# Page\n\n" + text)
    with pytest.raises(MarkerError, match=message) as caught:
        parse(page)
    assert str(caught.value).startswith("page.md:3: ")


def test_markers_apply_to_the_block_below(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tests.docs.blocks.ROOT", tmp_path)
    page = tmp_path / "page.md"
    page.write_text(
        "Text.\n\n"
        '<!-- doc-test: postgres sub="db.internal=>{pg_url}" env=A=1 timeout=5 -->\n'
        "```sh\necho db.internal\n```\n\n"
        "```console\n$ echo hi\nhi\n```\n"
    )
    first, second = parse(page)
    assert (first.line, first.language, first.postgres, first.timeout) == (4, "sh", True, 5.0)
    assert first.subs == [("db.internal", "{pg_url}")]
    assert first.env == {"A": "1"}
    assert (second.line, second.postgres, second.subs) == (8, False, [])
    assert shell_commands(second) == "echo hi\n"
