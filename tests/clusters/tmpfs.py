"""A small tmpfs to put a data or WAL directory on, so that tests can fill the disk.

Root only (``mount -t tmpfs``). The mount belongs to the servers' user with mode 0700, as
PostgreSQL wants for its directories. :meth:`Tmpfs.fill` writes a ballast file that
leaves only a little space free, so a test reaches "disk full" in milliseconds instead
of writing the whole filesystem through the server; :meth:`Tmpfs.free` deletes it
again ("the operator freed some space").
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .binaries import RunAs, tmpfs_reason
from .resources import unmount

MiB = 1024 * 1024


class TmpfsError(RuntimeError):
    """A tmpfs could not be mounted (not root, or mounting is not allowed here)."""


@dataclass(frozen=True)
class Usage:
    """Space on a filesystem, in bytes."""

    total: int
    used: int
    free: int


class Tmpfs:
    """A mounted tmpfs of ``size`` bytes at ``path`` (an empty directory)."""

    BALLAST = ".ballast"

    def __init__(self, path: Path, size: int, owner: RunAs) -> None:
        reason = tmpfs_reason()
        if reason is not None:
            raise TmpfsError(reason)
        path.mkdir(parents=True, exist_ok=True)
        options = f"size={size},mode=0700,uid={owner.uid},gid={owner.gid}"
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "agentckpt-tmpfs", str(path)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise TmpfsError(f"mount -t tmpfs failed: {done.stderr.strip() or done.returncode}")
        self.path = path
        self.size = size
        self.mounted = True

    def __repr__(self) -> str:
        return f"<Tmpfs {self.path} {self.size // MiB} MiB>"

    def usage(self) -> Usage:
        """Total, used and free bytes now."""
        st = os.statvfs(self.path)
        total = st.f_blocks * st.f_frsize
        free = st.f_bavail * st.f_frsize
        return Usage(total=total, used=total - free, free=free)

    @property
    def ballast(self) -> Path:
        """The file :meth:`fill` writes."""
        return self.path / self.BALLAST

    def fill(self, leave: int = 1 * MiB) -> int:
        """Grow the ballast until only about ``leave`` bytes are free; bytes added.

        The ballast is written with real data (tmpfs does not allocate holes), in 1 MiB
        chunks and then smaller ones, and stops short of ENOSPC itself.
        """
        added = 0
        with open(self.ballast, "ab") as f:
            for chunk in (MiB, 64 * 1024, 4096):
                block = b"\0" * chunk
                while self.usage().free - chunk >= leave:
                    try:
                        f.write(block)
                        f.flush()
                    except OSError:  # someone else used the space meanwhile
                        return added
                    added += chunk
        return added

    def free(self) -> None:
        """Delete the ballast, giving its space back."""
        self.ballast.unlink(missing_ok=True)

    def resize(self, size: int) -> None:
        """Grow (or shrink) the filesystem in place (``mount -o remount,size=``)."""
        subprocess.run(
            ["mount", "-o", f"remount,size={size}", str(self.path)], check=True, capture_output=True
        )
        self.size = size

    def unmount(self) -> None:
        """Unmount (lazily if still busy); idempotent."""
        if self.mounted:
            unmount(self.path)
            self.mounted = False
