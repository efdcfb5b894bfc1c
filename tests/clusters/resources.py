"""Make sure everything the fixtures start goes away: directories, processes, mounts.

Each cluster, bouncer and mount lives in its own base directory
``$TMPDIR/agentckpt-cluster-<name>-XXXX`` and registers itself here while it is alive. The
fixtures clean up in ``finally``; an ``atexit`` hook cleans whatever is still registered
(a fixture interrupted half-way, a test that made clusters itself and forgot). A run that
was SIGKILLed cannot clean up: its servers stop on their own (see ``_keeper.py``) and the
next run removes its directories and mounts (:func:`reap_stale`), since every base
directory records the process that made it.
"""

from __future__ import annotations

import atexit
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Protocol

ENV_LOGS = "AGENTCKPT_CLUSTER_LOGS"
PREFIX = "agentckpt-cluster-"
OWNER_FILE = "owner"


class Resource(Protocol):
    """Anything that can be cleaned up; cleanup must be idempotent and never raise."""

    def cleanup(self) -> None:
        """Stop and remove everything this resource holds."""


_live: dict[int, Resource] = {}
_lock = threading.Lock()


def track(resource: Resource) -> None:
    """Register ``resource`` for the atexit safety net."""
    with _lock:
        _live[id(resource)] = resource


def untrack(resource: Resource) -> None:
    """Forget ``resource`` (it cleaned itself up)."""
    with _lock:
        _live.pop(id(resource), None)


def live() -> list[Resource]:
    """The resources not cleaned up yet, oldest first."""
    with _lock:
        return list(_live.values())


@atexit.register
def cleanup_all() -> None:
    """Clean every live resource, newest first (a standby before its primary)."""
    for resource in reversed(live()):
        try:
            resource.cleanup()
        except Exception as exc:  # the safety net must try every resource
            print(f"agentckpt clusters: cleanup of {resource!r} failed: {exc}", file=sys.stderr)
        untrack(resource)
    wait_for_deletions()


def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2 :].split()[19]


def make_base_dir(tmp_root: Path, name: str) -> Path:
    """A fresh base directory, stamped with this process so a later run can reap it."""
    path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{name}-", dir=tmp_root))
    (path / OWNER_FILE).write_text(f"{os.getpid()} {_start_time(os.getpid())}\n")
    return path


def mounts_under(path: Path) -> list[Path]:
    """Mount points at or below ``path``, deepest first."""
    found = []
    prefix = str(path.resolve())
    for line in Path("/proc/self/mounts").read_text().splitlines():
        # /proc/self/mounts escapes space, tab, newline and backslash as octal.
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[1])
        if point == prefix or point.startswith(prefix + "/"):
            found.append(Path(point))
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def unmount(point: Path) -> None:
    """Unmount ``point``; lazily when it is busy, so cleanup never hangs on it."""
    if subprocess.run(["umount", str(point)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "--lazy", str(point)], capture_output=True)


_deletions: queue.Queue[Path] = queue.Queue()
_deleter: threading.Thread | None = None


def _delete_forever() -> None:
    while True:
        path = _deletions.get()
        shutil.rmtree(path, ignore_errors=True)
        _deletions.task_done()


def remove_tree(path: Path) -> None:
    """Remove a base directory, unmounting anything still mounted inside it first.

    The directory is renamed at once (so it is gone for everyone) and deleted by a
    background thread: deleting a freshly written 40 MB data directory takes this disk up
    to a second, which would otherwise be most of a replicated pair's teardown.
    :func:`wait_for_deletions` (run at exit) waits for the thread.
    """
    global _deleter
    if not path.exists():
        return
    if os.geteuid() == 0:
        for point in mounts_under(path):
            unmount(point)
    doomed = path.with_name(f"{path.name}.deleting")
    try:
        path.rename(doomed)
    except OSError:
        shutil.rmtree(path, ignore_errors=True)
        return
    with _lock:
        if _deleter is None:
            _deleter = threading.Thread(target=_delete_forever, name="cluster-rm", daemon=True)
            _deleter.start()
    _deletions.put(doomed)


@atexit.register
def wait_for_deletions() -> None:
    """Wait until every directory handed to :func:`remove_tree` is deleted."""
    if _deleter is not None:
        _deletions.join()


def logs_root() -> Path:
    """Where logs of failed fixtures are kept: ``$AGENTCKPT_CLUSTER_LOGS`` or
    ``$TMPDIR/agentckpt-cluster-logs``."""
    return Path(os.environ.get(ENV_LOGS) or Path(tempfile.gettempdir(), "agentckpt-cluster-logs"))


def keep_logs(name: str, files: list[Path]) -> Path | None:
    """Copy ``files`` (those that exist) to a new directory under :func:`logs_root`."""
    existing = [f for f in files if f.is_file()]
    if not existing:
        return None
    root = logs_root()
    root.mkdir(parents=True, exist_ok=True)
    dest = Path(tempfile.mkdtemp(prefix=f"{name}-{time.strftime('%Y%m%d-%H%M%S')}-", dir=root))
    for f in existing:
        shutil.copy2(f, dest / f.name)
    return dest


def reap_stale(tmp_root: Path) -> list[Path]:
    """Remove base directories (and their mounts) left by runs that no longer exist."""
    removed = []
    for path in sorted(tmp_root.glob(f"{PREFIX}*")):
        try:
            pid_text, started = (path / OWNER_FILE).read_text().split()
        except (OSError, ValueError):
            if path.name.endswith(".deleting"):  # half deleted: finish it (harmless if
                shutil.rmtree(path, ignore_errors=True)  # its owner is at it too)
                removed.append(path)
            continue  # else not ours, or being created right now
        pid = int(pid_text)
        if pid == os.getpid() or _start_time(pid) == started:
            continue  # its run is still alive
        remove_tree(path)
        removed.append(path)
    return removed
