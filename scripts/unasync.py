"""Generate the synchronous twins of the async sources.

The async code is the only source: every ``<name>_async.py`` under ``src/agentckpt``
generates ``<name>.py`` beside it, the layout psycopg uses. The twin is derived token by
token (Python's own tokenizer), so a rule can only ever touch code, never prose:

- ``async def|with|for`` lose ``async``; ``await`` disappears;
- a name ``Async<Name>`` becomes ``<Name>`` (``AsyncStore`` -> ``Store``), a name
  ``<name>_async`` becomes ``<name>`` (modules such as ``store_async``, helpers such as
  ``_compat.sleep_async``), and the async dunders become their sync ones;
- ``Awaitable[T]`` as the result of a ``Callable`` becomes ``T``.

In docstrings and comments only the first two rules apply (so an ``async with await
AsyncStore.connect(...)`` example reads ``with Store.connect(...)``); nothing else in
prose is rewritten. The few pieces whose sync and async forms differ in kind, not in
tokens (group commit, background threads, sleeping), are written by hand, side by side,
in ``agentckpt._compat``, and reached from the sources by their ``Async`` names.

    python scripts/unasync.py          # rewrite the generated files
    python scripts/unasync.py --check  # fail if any is stale (the test suite runs this)
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "src" / "agentckpt"

HEADER = "# GENERATED from {src} by scripts/unasync.py; do not edit.\n"

_DUNDERS = {
    "__aenter__": "__enter__",
    "__aexit__": "__exit__",
    "__aiter__": "__iter__",
    "__anext__": "__next__",
}
_ASYNC_CLASS = re.compile(r"\bAsync([A-Z]\w*)\b")
_ASYNC_KEYWORD = re.compile(r"\basync (def|with|for)\b")
_AWAIT = re.compile(r"\bawait ")
# Callable[[X], Callable[T]] comes from Callable[[X], Awaitable[T]]: unwrap it.
_CALLABLE_AWAITABLE = re.compile(r"Callable\[\[([^\]]*)\], Callable\[([\w\[\], |.]+?)\]\]")


def pairs() -> list[tuple[Path, Path]]:
    """Every (async source, generated twin) of the package."""
    return [
        (src, src.with_name(src.name.removesuffix("_async.py") + ".py"))
        for src in sorted(ROOT.rglob("*_async.py"))
    ]


def _name(name: str) -> str:
    if name in _DUNDERS:
        return _DUNDERS[name]
    if name == "Awaitable":
        return "Callable"
    if name.startswith("Async") and name[5:6].isupper():
        return name[5:]
    if name.endswith("_async"):
        return name.removesuffix("_async")
    return name


def _prose(text: str) -> str:
    text = _ASYNC_KEYWORD.sub(r"\1", text)
    text = _AWAIT.sub("", text)
    return _ASYNC_CLASS.sub(r"\1", text)


def transform(source: str) -> str:
    """Turn async source text into its sync twin (before formatting)."""
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def at(pos: tuple[int, int]) -> int:
        return offsets[pos[0] - 1] + pos[1]

    edits: list[tuple[int, int, str]] = []
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    for i, tok in enumerate(tokens):
        start, end = at(tok.start), at(tok.end)
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if tok.type == tokenize.NAME:
            if (
                tok.string == "async" and nxt is not None and nxt.string in ("def", "with", "for")
            ) or (tok.string == "await" and nxt is not None):
                edits.append((start, at(nxt.start), ""))
            else:
                new = _name(tok.string)
                if new != tok.string:
                    edits.append((start, end, new))
        elif tok.type in (tokenize.STRING, tokenize.COMMENT):
            new = _prose(tok.string)
            if new != tok.string:
                edits.append((start, end, new))
    text = source
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    text = _CALLABLE_AWAITABLE.sub(r"Callable[[\1], \2]", text)
    # Renames can repeat a name in one import line (Awaitable -> Callable).
    return re.sub(
        r"^(from \S+ import )(.+)$",
        lambda m: m[1] + ", ".join(dict.fromkeys(n.strip() for n in m[2].split(","))),
        text,
        flags=re.MULTILINE,
    )


def _ruff(args: list[str], text: str, filename: str) -> str:
    # The ruff of the running environment (pinned in the test extra), not one on PATH.
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args, "--stdin-filename", filename, "-"],
        input=text,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def generate(src: Path, dst: Path) -> str:
    """The generated twin's text: transformed, imports sorted, formatted."""
    text = HEADER.format(src=src.name) + transform(src.read_text(encoding="utf-8"))
    # I: imports sorted; UP028: `for x in it: yield x` (from `async for`) -> `yield from`.
    fix = ["check", "--fix-only", "--select", "I,UP028", "--unsafe-fixes", "--quiet"]
    text = _ruff(fix, text, str(dst))
    return _ruff(["format", "--quiet"], text, str(dst))


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for src, dst in pairs():
        generated = generate(src, dst)
        current = dst.read_text(encoding="utf-8") if dst.exists() else ""
        if current != generated:
            stale.append(dst.relative_to(ROOT.parent).as_posix())
            if not check:
                dst.write_text(generated, encoding="utf-8")
    if check and stale:
        print("stale generated files (run python scripts/unasync.py):", ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
