"""Loads the named SQL and the numbered migrations shipped in ``agentckpt/sql/<dialect>/``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

_NAME = re.compile(r"^-- name: ([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)
_MIGRATION = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    """One forward-only schema change."""

    version: int
    name: str
    sql: str


def _sql_dir(dialect: str):  # type: ignore[no-untyped-def]
    return files("agentckpt").joinpath("sql", dialect)


@cache
def load_queries(dialect: str) -> dict[str, str]:
    """Every ``-- name:`` block of every ``.sql`` file beside the migrations, by name."""
    queries: dict[str, str] = {}
    for entry in sorted(_sql_dir(dialect).iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".sql") or entry.name == "schema.sql":
            continue
        text = entry.read_text(encoding="utf-8")
        parts = _NAME.split(text)
        for name, body in zip(parts[1::2], parts[2::2], strict=True):
            if name in queries:
                raise RuntimeError(f"query {name!r} is defined twice in sql/{dialect}")
            queries[name] = _without_comment_lines(body)
    return queries


def _without_comment_lines(body: str) -> str:
    # The comments are for readers of the .sql files; sent, they cost bytes per execute,
    # and psycopg caches its parse of a statement only below 4096 characters.
    lines = (line.rstrip() for line in body.splitlines())
    return "\n".join(line for line in lines if line and not line.lstrip().startswith("--"))


def split_statements(sql: str) -> list[str]:
    """Split a block into statements at semicolons that end a line; drop comment lines."""
    lines = [line for line in sql.splitlines() if not line.lstrip().startswith("--")]
    text = "\n".join(lines)
    return [s.strip() for s in re.split(r";\s*(?:\n|$)", text) if s.strip()]


@cache
def load_migrations(dialect: str) -> tuple[Migration, ...]:
    """The dialect's migrations, ordered by version; versions are unique and start at 1."""
    found = []
    for entry in _sql_dir(dialect).joinpath("migrations").iterdir():
        match = _MIGRATION.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions) or (versions and versions[0] != 1):
        raise RuntimeError(f"sql/{dialect}/migrations: versions must be unique, from 0001")
    return tuple(found)


def schema_sql(dialect: str) -> str:
    """The documented schema, the state every migrated database must reach."""
    text: str = _sql_dir(dialect).joinpath("schema.sql").read_text(encoding="utf-8")
    return text


# StepWrite.params()'s names in StepWrite.positional()'s order: $1 is run_id, ...
STEP_PARAMS = (
    "run_id", "step", "parent_step", "kind", "is_open", "codec", "payload", "state_version",
    "write_version", "raw_bytes", "state_bytes", "checksum", "expected_step",
    "expected_version", "epoch", "snapshot_step", "chain_bytes", "prune_below", "seal_step",
    "metadata", "write_token",
)  # fmt: skip
_NAMED_PARAM = re.compile(r"%\((\w+)\)b")


def positional_sql(sql: str, names: Sequence[str] = STEP_PARAMS) -> str:
    """``sql`` with each ``%(name)b`` placeholder replaced by PostgreSQL's ``$n``, ``n``
    the name's place in ``names`` (from 1): the text a raw cursor sends with positional
    parameters. A name not in ``names`` raises ``KeyError``."""
    index = {name: n for n, name in enumerate(names, 1)}
    return _NAMED_PARAM.sub(lambda m: f"${index[m[1]]}", sql)
