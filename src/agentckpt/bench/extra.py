"""What ``agentckpt bench`` needs beyond the base install: the ``bench`` extra.

The command's parser (and so ``agentckpt bench --help``) imports none of it; a run checks
for it first and, when something is missing, says in one line what to install.
"""

from __future__ import annotations

import importlib

__all__ = ["INSTALL", "REQUIRED", "missing_extra"]

INSTALL = "pip install 'agentckpt[bench]'"

# Without these no benchmark runs (every PostgreSQL subject and the sites use psycopg).
# LangGraph's savers are checked per subject instead: a missing one skips baseline (c).
REQUIRED = ("psycopg", "psycopg_pool")


def missing_extra() -> str | None:
    """The one line to print when the bench extra is not usable, else ``None``."""
    absent: list[str] = []
    broken: list[str] = []
    for module in REQUIRED:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            # The module itself, or one it needs (psycopg_pool imports psycopg).
            name = exc.name or module
            if name not in absent:
                absent.append(name)
        except ImportError as exc:
            # Installed but unusable: plain psycopg without libpq on the machine, say.
            # The modules after it would fail the same way (psycopg_pool imports psycopg).
            broken.append(f"{module}: {_first_line(exc)}")
            break
    if not absent and not broken:
        return None
    reasons = [f"missing: {', '.join(absent)}"] if absent else []
    reasons += broken
    return f"agentckpt bench needs the bench extra: {INSTALL} ({'; '.join(reasons)})"


def _first_line(exc: ImportError) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0].rstrip(".") if lines else type(exc).__name__
