"""What the figures were measured on: software versions and the machine."""

from __future__ import annotations

import os
import platform
import sqlite3
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["describe_environment"]

_PACKAGES = (
    "agentckpt",
    "psycopg",
    "psycopg-binary",
    "psycopg-pool",
    "orjson",
    "zstandard",
    "langgraph",
    "langgraph-checkpoint",
    "langgraph-checkpoint-postgres",
    "langgraph-checkpoint-sqlite",
    "aiosqlite",
    "langchain-core",
    "matplotlib",
)


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / (1024 * 1024), 1)
    except (OSError, ValueError):
        pass
    return None


def describe_environment() -> dict[str, Any]:
    """Python, package and SQLite versions, and the machine's CPU and memory."""
    return {
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "packages": {name: _version(name) for name in _PACKAGES},
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "cpu_model": _cpu_model(),
            "memory_gib": _memory_gib(),
        },
    }
