"""Simulated power loss: build the LD_PRELOAD shim (powerloss.c) and cut the power.

:func:`build_shim` compiles ``powerloss.c`` into a shared library; a process started with
:func:`shim_env` journals, for the files of one directory, every write not yet made
durable by fsync/fdatasync. After that process is SIGKILLed, :func:`cut_power` replays
the journal backwards, so the files hold exactly what a disk that lost everything
unsynced would hold. Returns how many unsynced writes were discarded (a cut that
discards nothing tested nothing).
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

SOURCE = Path(__file__).with_name("powerloss.c")


def build_shim(out_dir: Path) -> Path | None:
    """Compile the shim into ``out_dir``; None when no C compiler is installed."""
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        return None
    library = out_dir / "powerloss.so"
    flags = ["-shared", "-fPIC", "-O1", "-Wall", "-Werror"]
    subprocess.run(
        [compiler, *flags, "-o", str(library), str(SOURCE), "-ldl", "-lpthread"],
        check=True,
        capture_output=True,
        text=True,
    )
    return library


def shim_env(library: Path, directory: Path, journal: Path) -> dict[str, str]:
    """The environment of a process whose writes under ``directory`` are journalled."""
    env = dict(os.environ)
    env["LD_PRELOAD"] = str(library)
    env["AGENTCKPT_POWERLOSS_DIR"] = str(directory.resolve())
    env["AGENTCKPT_POWERLOSS_JOURNAL"] = str(journal)
    return env


@dataclass(frozen=True, slots=True)
class Undo:
    """What one write or truncate changed: the bytes at ``offset`` and the size before."""

    offset: int
    old_size: int
    old: bytes


def read_journal(journal: Path) -> dict[str, list[Undo]]:
    """Per file, the undo records written after its last sync marker, oldest first."""
    data = journal.read_bytes() if journal.exists() else b""
    pending: dict[str, list[Undo]] = {}
    at = 0
    # The writer may have died inside a record, so before the write it describes:
    # a record that does not fit in the journal ends it.
    while at + 5 <= len(data):
        kind = data[at : at + 1]
        (plen,) = struct.unpack_from("=I", data, at + 1)
        if at + 5 + plen > len(data):
            break
        path = data[at + 5 : at + 5 + plen].decode()
        at += 5 + plen
        if kind == b"S":
            pending.pop(path, None)
            continue
        if kind != b"W":
            raise AssertionError(f"journal {journal} is damaged at byte {at}")
        if at + 20 > len(data):
            break
        offset, old_size, n_old = struct.unpack_from("=qqI", data, at)
        at += 20
        if at + n_old > len(data):
            break
        pending.setdefault(path, []).append(Undo(offset, old_size, data[at : at + n_old]))
        at += n_old
    return pending


def cut_power(journal: Path) -> int:
    """Undo every journalled write not followed by a sync of its file; return how many."""
    pending = read_journal(journal)
    for path, undos in pending.items():
        with open(path, "r+b") as file:
            for undo in reversed(undos):
                file.truncate(undo.old_size)
                file.seek(undo.offset)
                file.write(undo.old)
    journal.unlink(missing_ok=True)
    return sum(map(len, pending.values()))
