"""Every named query has one owner, exists in every dialect, and is reached by its constant.

Each room that runs SQL owns one file per dialect, ``sql/<dialect>/<file>.sql``, and a
``queries`` module of constants naming its queries. ``driver.sql`` holds the drivers'
own statements, which differ by dialect and are run only by ``_backends``.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "agentckpt"
DIALECTS = ("postgres", "sqlite")
# The queries module of each room, and the SQL file it owns.
OWNERS = {
    "agentckpt.store.queries": "store.sql",
    "agentckpt.runs.queries": "runs.sql",
    "agentckpt.conversation.queries": "conversations.sql",
    "agentckpt.integrations.langgraph.queries": "langgraph.sql",
    "agentckpt.ops.queries": "ops.sql",
}
_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)
_CALLS = {"read", "write", "write_many"}


def names_in(dialect: str, file: str) -> set[str]:
    return set(_NAME.findall((SRC / "sql" / dialect / file).read_text(encoding="utf-8")))


def constants(module: str) -> dict[str, str]:
    loaded = importlib.import_module(module)
    return {k: v for k, v in vars(loaded).items() if k.isupper() and isinstance(v, str)}


@pytest.mark.parametrize("module", sorted(OWNERS))
@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_query_of_a_room_exists_in_its_file_in_every_dialect(
    module: str, dialect: str
) -> None:
    defined = names_in(dialect, OWNERS[module])
    missing = sorted(set(constants(module).values()) - defined)
    assert not missing, f"{module}: not in sql/{dialect}/{OWNERS[module]}: {missing}"


@pytest.mark.parametrize("module", sorted(OWNERS))
@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_query_in_a_file_has_its_constant(module: str, dialect: str) -> None:
    unowned = sorted(names_in(dialect, OWNERS[module]) - set(constants(module).values()))
    assert not unowned, f"sql/{dialect}/{OWNERS[module]}: no constant in {module}: {unowned}"


def test_every_sql_file_has_an_owner() -> None:
    for dialect in DIALECTS:
        files = {p.name for p in (SRC / "sql" / dialect).glob("*.sql")}
        assert files == {*OWNERS.values(), "driver.sql", "schema.sql"}, dialect


def test_a_query_name_is_defined_once_per_dialect() -> None:
    for dialect in DIALECTS:
        seen: dict[str, str] = {}
        for path in sorted((SRC / "sql" / dialect).glob("*.sql")):
            for name in _NAME.findall(path.read_text(encoding="utf-8")):
                assert name not in seen, f"{dialect}: {name} in {seen.get(name)} and {path.name}"
                seen[name] = path.name


def test_rooms_name_queries_by_constant_never_by_a_string() -> None:
    """Outside the drivers, a query passed to the backend is a constant of a queries module."""
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        if "_backends" in path.parts or path.name == "queries.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _CALLS
                and isinstance(node.func.value, ast.Attribute)
                and node.func.value.attr == "backend"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert not offenders, offenders


def test_a_room_uses_only_its_own_queries() -> None:
    """``queries`` imported by a module is the queries module of that module's room."""
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module = ".".join(path.relative_to(SRC.parent).with_suffix("").parts)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    owner = f"{node.module}.{alias.name}"
                    if owner in OWNERS:
                        room = owner.removesuffix(".queries")
                        assert module.startswith(room + ".") or (
                            room == "agentckpt.ops" and module.startswith("agentckpt.cli.")
                        ), f"{module} uses {owner}"
