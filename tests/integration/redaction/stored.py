"""Every byte agentckpt stored, as a test can search it for a value that must be absent."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import psycopg
import zstandard

_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
TABLES = {
    "steps": ("codec", "payload"),
    "blobs": ("codec", "data"),
    "effects": ("codec", "payload"),
    "history": ("codec", "payload"),
    "events": ("codec", "payload"),
    "step_writes": ("codec", "payload"),
}


def _unpacked(codec: str, payload: bytes) -> bytes:
    """The bytes before compression, whatever the table's codec names (``json+zstd``,
    ``zstd``, ``none``...): every zstd frame is decompressed, the rest kept as it is."""
    if payload[:4] == _ZSTD_MAGIC:
        return zstandard.ZstdDecompressor().decompressobj().decompress(payload)
    return payload


def stored_bytes(url: str, tmp: Path) -> bytes:
    """Every byte of every agentckpt row (payloads decompressed), and on SQLite the raw
    database file and its WAL too."""
    chunks: list[bytes] = []
    if url.startswith("sqlite"):
        path = Path(url.removeprefix("sqlite:///"))
        for suffix in ("", "-wal"):
            file = Path(f"{path}{suffix}")
            if file.exists():
                chunks.append(file.read_bytes())
        conn: Any = sqlite3.connect(path)
    else:
        base, _, query = url.partition("?")
        schema = query.removeprefix("schema=")
        conn = psycopg.connect(base, options=f"-c search_path={schema}")
    with conn:
        runs = conn.execute("SELECT config, metadata FROM runs").fetchall()
        chunks += [bytes(c) + str(m).encode() for c, m in runs]
        chunks += [str(m).encode() for (m,) in conn.execute("SELECT metadata FROM step_index")]
        for table, (codec, column) in TABLES.items():
            for c, data in conn.execute(f"SELECT {codec}, {column} FROM {table}").fetchall():
                chunks.append(_unpacked(c, bytes(data)))
    return b"\n".join(chunks)
