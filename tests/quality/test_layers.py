"""The layer rules of the package, checked over its import graph.

From the bottom: the pure core (``_core``, ``errors``, ``records``), the hand-written
sync/async pairs (``_compat``), the drivers (``_backends``), the store, the libraries
the front doors share (``ops``, ``blobstores``), the front doors (conversations, runs,
each integration, the inspector), and the applications on top (the CLI, the benchmark,
the demo, the package's own ``__init__``). A module may import its own layer's room and
anything below; front doors never import each other. Imports under ``if TYPE_CHECKING:``
are for annotations only and are not counted.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "agentckpt"

# Room -> layer (lower may not import higher). A room is a module path prefix.
LAYERS: dict[str, int] = {
    "agentckpt._version": 0,
    "agentckpt.errors": 0,
    "agentckpt.records": 0,
    "agentckpt._core": 0,
    "agentckpt.tenancy": 0,
    "agentckpt.redaction": 0,
    "agentckpt.crypto": 0,
    "agentckpt._compat": 1,
    "agentckpt.telemetry": 1,
    "agentckpt._backends": 2,
    "agentckpt.store": 3,
    "agentckpt.blobstores": 4,
    "agentckpt.ops": 4,
    "agentckpt.conversation": 5,
    "agentckpt.runs": 5,
    "agentckpt.integrations.langgraph": 5,
    "agentckpt.integrations.openai_agents": 5,
    "agentckpt.inspector": 5,
    "agentckpt.integrations": 6,
    "agentckpt.cli": 6,
    "agentckpt.bench": 6,
    "agentckpt.demo": 6,
    "agentckpt.__main__": 6,
    "agentckpt": 6,
}
FRONT_DOOR = 5


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def room(module: str) -> str:
    best = max((r for r in LAYERS if module == r or module.startswith(r + ".")), key=len)
    return best


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports(path: Path) -> list[tuple[str, int, bool]]:
    """(imported agentckpt module, line, at module level) for each runtime import."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_lines(tree)
    top = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # ``from a import b``: b is a module of a, or a name defined in a.
            names = [
                f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in MODULES else node.module
                for a in node.names
            ]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            if name == "agentckpt" or name.startswith("agentckpt."):
                found.append((name, node.lineno, id(node) in top))
    return found


MODULES = {module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _resolve(name: str) -> str | None:
    """The module an import names (``from a.b import c`` may name a module or a name)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def test_every_module_is_in_a_room() -> None:
    for module in MODULES:
        assert room(module), module


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_imports_only_its_room_and_below(module: str) -> None:
    own = room(module)
    for name, line, _ in imports(MODULES[module]):
        target = _resolve(name)
        if target is None or target == module:
            continue
        theirs = room(target)
        where = f"{module}:{line} imports {target}"
        assert LAYERS[theirs] <= LAYERS[own], f"{where}, a higher layer"
        if LAYERS[own] == FRONT_DOOR and LAYERS[theirs] == FRONT_DOOR:
            assert theirs == own, f"{where}: front doors do not import each other"


def test_the_engine_imports_no_integration() -> None:
    engine = ("agentckpt._core", "agentckpt._backends", "agentckpt.store", "agentckpt._compat")
    for module, path in MODULES.items():
        if module.startswith(engine):
            for name, line, _ in imports(path):
                assert not name.startswith("agentckpt.integrations"), f"{module}:{line}"


def test_no_import_cycles() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in MODULES.items():
        for name, _, at_top in imports(path):
            target = _resolve(name)
            if at_top and target and target != module:
                graph[module].add(target)
    # A package's __init__ re-exporting its modules is not a cycle with them.
    for module in list(graph):
        graph[module] = {t for t in graph[module] if not module.startswith(t + ".")}
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycle = [*path[path.index(nxt) :], nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for module in sorted(MODULES):
        if module not in state:
            visit(module)


def test_no_module_level_getattr_breaks_a_cycle() -> None:
    # Only the integrations package loads its adapters lazily, for optional frameworks.
    allowed = {"agentckpt.integrations"}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        lazy = any(
            isinstance(node, ast.FunctionDef) and node.name == "__getattr__" for node in tree.body
        )
        assert not lazy or module in allowed, f"{module} defines a module __getattr__"
