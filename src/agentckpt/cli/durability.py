"""Whether an acknowledged commit survives a crash: settings in, findings out (no I/O).

``agentckpt doctor`` reads the settings from the database and the file system and
prints what :func:`assess_postgres` and :func:`assess_sqlite` conclude, with what to
change. research/reliability.md has the experiments behind each rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from agentckpt._core.durability import (
    Weakness,
    fsync_weakness,
    full_page_writes_weakness,
    synchronous_commit_weakness,
)

Status = Literal["ok", "info", "warn", "fail"]

# Filesystems where SQLite's WAL mode (shared memory, POSIX locks) is unreliable.
NETWORK_FILESYSTEMS = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "9p",
        "fuse.sshfs",
        "afs",
        "ceph",
        "glusterfs",
        "fuse.glusterfs",
        "lustre",
        "gpfs",
        "fuse.s3fs",
        "fuse.gcsfuse",
        "fuse.rclone",
        "virtiofs",
    }
)
RAM_FILESYSTEMS = frozenset({"tmpfs", "ramfs"})
LOW_DISK_BYTES = 1_000_000_000


@dataclass(frozen=True, slots=True)
class Finding:
    """One check: what was found, how it stands, and what to change if anything."""

    check: str
    value: str
    status: Status
    advice: str = ""


def assess_postgres(
    settings: dict[str, Any], standbys: list[dict[str, Any]] | None = None
) -> list[Finding]:
    """Findings for the values of the ``ops_durability`` query on PostgreSQL, and for the
    standbys of ``ops_replication`` (one finding each), ending with the verdict on
    failover: can a commit the primary acknowledged be lost when a standby takes over?
    """
    out: list[Finding] = []
    sync_names = str(settings.get("synchronous_standby_names") or "").strip()
    replicas = int(settings.get("replicas") or 0)
    sync_replicas = int(settings.get("sync_replicas") or 0)
    # pg_stat_replication hides a standby's state from a role without pg_monitor.
    hidden = int(settings.get("replicas_hidden") or 0)

    if settings.get("in_recovery"):
        out.append(
            Finding(
                "server role",
                "standby (read-only)",
                "fail",
                "this server is a standby in recovery: point the store URL at the primary",
            )
        )
    # The settings that can lose acknowledged commits: the rules (and words) the store
    # also warns with when it connects (agentckpt._core.durability).
    commit = str(settings.get("synchronous_commit"))
    weak = synchronous_commit_weakness(commit, sync_names)
    if weak is not None:
        out.append(Finding(weak.setting, weak.value, "fail", weak.risk))
    elif commit == "remote_write" and sync_names:
        out.append(
            Finding(
                "synchronous_commit",
                commit,
                "warn",
                "the standby acknowledges before flushing to its disk; if primary and "
                "standby crash together commits can be lost: set synchronous_commit = on",
            )
        )
    else:
        out.append(Finding("synchronous_commit", commit, "ok"))

    fsync = str(settings.get("fsync"))
    out.append(_finding("fsync", fsync, fsync_weakness(fsync)))
    fpw = str(settings.get("full_page_writes"))
    out.append(_finding("full_page_writes", fpw, full_page_writes_weakness(fpw)))

    replication = f"{replicas} connected ({sync_replicas} synchronous)"
    if hidden:
        out.append(
            Finding(
                "synchronous_standby_names",
                f"{sync_names or '(empty)'!r}; {replicas} connected, state hidden",
                "warn",
                "this role may not see pg_stat_replication's sync_state: GRANT pg_monitor "
                "TO <agentckpt user> so doctor can tell whether a standby is synchronous",
            )
        )
    elif sync_names and sync_replicas == 0:
        out.append(
            Finding(
                "synchronous_standby_names",
                f"{sync_names!r}; {replication}",
                "fail",
                "a synchronous standby is required but none is connected, so every commit "
                "waits: start the standby, or empty synchronous_standby_names",
            )
        )
    elif sync_names:
        out.append(Finding("synchronous_standby_names", f"{sync_names!r}; {replication}", "ok"))
    elif replicas:
        out.append(
            Finding(
                "synchronous_standby_names",
                f"(empty); {replication}",
                "fail",
                "replication is asynchronous: a failover to a replica can lose commits the "
                "primary acknowledged. Set synchronous_standby_names = 'ANY 1 (<standby "
                "names>)' to make failover lossless",
            )
        )
    else:
        out.append(
            Finding(
                "replication",
                "no standby",
                "warn",
                "a lost disk or host loses every checkpoint since the last backup: add a "
                "synchronous standby (synchronous_standby_names) or back up continuously",
            )
        )
    for standby in standbys or []:
        out.append(_standby(standby))
    if not settings.get("in_recovery"):
        out.append(_failover(commit, fsync, sync_names, replicas, sync_replicas, hidden))
    checksums = str(settings.get("data_checksums"))
    out.append(
        Finding(
            "data_checksums",
            checksums,
            "ok" if checksums == "on" else "info",
            ""
            if checksums == "on"
            else "silent disk corruption goes unnoticed by PostgreSQL (agentckpt still "
            "checks every state's checksum): enable with pg_checksums --enable while the "
            "server is stopped",
        )
    )
    autovacuum = settings.get("autovacuum")
    if autovacuum is not None:
        out.append(
            Finding(
                "autovacuum",
                str(autovacuum),
                "ok" if autovacuum == "on" else "warn",
                ""
                if autovacuum == "on"
                else "pruned steps and rewritten run rows stay on disk as dead rows: turn "
                "autovacuum on (ALTER SYSTEM SET autovacuum = on; SELECT pg_reload_conf()) "
                "or VACUUM the agentckpt tables on a schedule",
            )
        )
    return out


def _finding(check: str, value: str, weak: Weakness | None) -> Finding:
    """``ok``, or ``fail`` with what the weak setting risks."""
    return Finding(check, value, "ok") if weak is None else Finding(check, value, "fail", weak.risk)


def _standby(row: dict[str, Any]) -> Finding:
    """One standby of ``ops_replication``: its state, and how far it is behind."""
    name = row.get("application_name") or "(unnamed)"
    state = row.get("state") or "unknown"
    sync_state = row.get("sync_state") or "hidden"
    behind = row.get("flush_behind_bytes")
    lag = "" if behind is None else f", {int(behind)} bytes not yet flushed there"
    value = f"{state}, {sync_state}{lag}"
    if state != "streaming":
        return Finding(
            f"standby {name}",
            value,
            "warn",
            "the standby is connected but not streaming (catching up, or a base backup): "
            "it cannot confirm commits yet",
        )
    return Finding(f"standby {name}", value, "ok")


def _failover(
    commit: str, fsync: str, sync_names: str, replicas: int, sync_replicas: int, hidden: int
) -> Finding:
    """The verdict: whether an acknowledged commit survives a failover to a standby."""
    check = "failover"
    if fsync != "on":
        return Finding(
            check,
            "acknowledged commits can be lost",
            "fail",
            "fsync is off: a crash of the primary's machine loses acknowledged commits "
            "(and may corrupt the cluster), whatever the standbys hold",
        )
    if commit == "off":
        return Finding(
            check,
            "acknowledged commits can be lost",
            "fail",
            "synchronous_commit = off acknowledges before the commit is flushed anywhere",
        )
    if hidden:
        return Finding(check, "unknown (standby state hidden)", "warn")
    if not replicas:
        return Finding(
            check,
            "no standby to fail over to",
            "warn",
            "acknowledged commits survive a crash of this server, but there is no failover: "
            "add a synchronous standby for availability and against a lost disk",
        )
    if not sync_names:
        return Finding(
            check,
            "acknowledged commits can be lost",
            "fail",
            "no synchronous standby: a failover to an asynchronous replica loses the commits "
            "it had not received (agentckpt then raises AcknowledgedStepsLostError)",
        )
    if commit == "local":
        return Finding(
            check,
            "acknowledged commits can be lost",
            "fail",
            "synchronous_commit = local does not wait for the synchronous standby",
        )
    if sync_replicas == 0:
        return Finding(check, "commits wait: no synchronous standby connected", "fail")
    if commit == "remote_write":
        return Finding(
            check,
            "lossless unless the standby's machine crashes too",
            "warn",
            "remote_write: the standby has the commit in its OS cache, not on its disk",
        )
    return Finding(check, "lossless: a synchronous standby confirms every commit", "ok")


_SYNCHRONOUS = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


def assess_sqlite(
    settings: dict[str, Any],
    *,
    path: str | None,
    fs_type: str | None,
    free_bytes: int | None,
    writable: bool,
) -> list[Finding]:
    """Findings for a SQLite store: its pragmas (``ops_durability``) and its file's place."""
    out: list[Finding] = []
    journal = str(settings.get("journal_mode", "")).lower()
    if journal == "wal":
        out.append(Finding("journal_mode", journal, "ok"))
    else:
        out.append(
            Finding(
                "journal_mode",
                journal,
                "fail",
                "agentckpt asks for WAL on every connection; SQLite refused it here, which "
                "happens on filesystems without shared-memory support: put the file on a "
                "local disk",
            )
        )
    level = int(settings.get("synchronous", -1))
    name = _SYNCHRONOUS.get(level, str(level))
    if level >= 2:
        out.append(Finding("synchronous", name, "ok"))
    else:
        out.append(
            Finding(
                "synchronous",
                name,
                "fail",
                "a power loss can lose acknowledged commits: agentckpt sets synchronous=FULL "
                "on its own connections; do not open the file with another setting",
            )
        )
    if path is None:
        out.append(
            Finding(
                "location",
                ":memory:",
                "fail",
                "an in-memory database vanishes with the process: use sqlite:///path/file.db",
            )
        )
        return out
    if fs_type in RAM_FILESYSTEMS:
        out.append(
            Finding(
                "location",
                f"{path} ({fs_type})",
                "fail",
                "the file is in RAM and is lost at reboot: move it to a disk-backed "
                "directory (e.g. under /var/lib or your home directory)",
            )
        )
    elif fs_type in NETWORK_FILESYSTEMS:
        out.append(
            Finding(
                "location",
                f"{path} ({fs_type})",
                "fail",
                "SQLite's locking and WAL are not reliable on network filesystems: use a "
                "local disk, or PostgreSQL for a shared store",
            )
        )
    elif fs_type == "overlay":
        out.append(
            Finding(
                "location",
                f"{path} ({fs_type})",
                "warn",
                "the file is in a container's writable layer and goes with the container: "
                "mount a volume for its directory",
            )
        )
    else:
        out.append(Finding("location", f"{path} ({fs_type or 'unknown filesystem'})", "ok"))
    if not writable:
        out.append(
            Finding(
                "permissions",
                "directory not writable",
                "fail",
                "SQLite needs to create the -wal and -shm files beside the database: make "
                "the directory writable by the agent's user",
            )
        )
    if free_bytes is not None:
        low = free_bytes < LOW_DISK_BYTES
        out.append(
            Finding(
                "free disk",
                f"{free_bytes / 1e9:.1f} GB",
                "warn" if low else "ok",
                "commits fail with StorageFullError when the disk fills: free space or move "
                "the file"
                if low
                else "",
            )
        )
    return out
