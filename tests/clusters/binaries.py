"""Find the programs the cluster fixtures run, and the user they run them as.

Every ``find_*``/``*_reason`` function answers with a value or with a reason string saying
why not; the fixtures turn a reason into a skip (or a failure under ``CI=true``).
"""

from __future__ import annotations

import functools
import glob
import grp
import os
import pwd
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV_BINDIR = "AGENTCKPT_PG_BINDIR"
ENV_USER = "AGENTCKPT_CLUSTER_USER"
ENV_TMP = "AGENTCKPT_CLUSTER_TMP"
CITUS_VERSION = "13.2.2"
DEFAULT_SERVER_USER = "postgres"


@dataclass(frozen=True)
class RunAs:
    """The operating-system user that owns data directories and runs the servers.

    ``initdb`` and ``pgbouncer`` refuse to run as root, so a root test run switches to
    ``postgres`` (or ``$AGENTCKPT_CLUSTER_USER``); anyone else runs them as themselves.
    """

    name: str
    uid: int
    gid: int

    @property
    def switches(self) -> bool:
        """True when commands run as another user than this process."""
        return self.uid != os.geteuid()

    def popen_kwargs(self) -> dict[str, Any]:
        """``subprocess`` keyword arguments that run a command as this user."""
        if not self.switches:
            return {}
        groups = [g.gr_gid for g in grp.getgrall() if self.name in g.gr_mem]
        return {"user": self.uid, "group": self.gid, "extra_groups": groups}

    def chown(self, path: Path) -> None:
        """Give ``path`` to this user (a no-op when not switching)."""
        if self.switches:
            os.chown(path, self.uid, self.gid)


@dataclass(frozen=True)
class Binaries:
    """Where the PostgreSQL programs are, and who runs them."""

    bindir: Path
    run_as: RunAs
    tmp_root: Path

    def tool(self, name: str) -> str:
        """The full path of a PostgreSQL program, e.g. ``initdb``."""
        return str(self.bindir / name)

    @property
    def pkglibdir(self) -> Path:
        """PostgreSQL's extension library directory (where ``citus.so`` goes)."""
        out = subprocess.run(
            [self.tool("pg_config"), "--pkglibdir"], capture_output=True, text=True, check=True
        )
        return Path(out.stdout.strip())

    @property
    def sharedir(self) -> Path:
        """PostgreSQL's share directory (where extension control files go)."""
        out = subprocess.run(
            [self.tool("pg_config"), "--sharedir"], capture_output=True, text=True, check=True
        )
        return Path(out.stdout.strip())


def find_bindir() -> Path | str:
    """The PostgreSQL bin directory: ``$AGENTCKPT_PG_BINDIR``, ``pg_config --bindir``, or
    the newest ``/usr/lib/postgresql/*/bin``; else a reason."""
    candidates: list[str] = []
    if os.environ.get(ENV_BINDIR):
        candidates.append(os.environ[ENV_BINDIR])
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        if out.returncode == 0:
            candidates.append(out.stdout.strip())
    # Debian's /usr/bin/pg_config belongs to libpq-dev and may name /usr/bin, which has
    # only wrappers; the real server binaries live in /usr/lib/postgresql/N/bin.
    candidates += sorted(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda p: int(Path(p).parent.name) if Path(p).parent.name.isdigit() else 0,
        reverse=True,
    )
    for candidate in candidates:
        path = Path(candidate)
        if all((path / tool).is_file() for tool in ("initdb", "postgres", "pg_ctl")):
            return path
    return f"no PostgreSQL bin directory with initdb, postgres and pg_ctl (tried {candidates})"


def find_run_as() -> RunAs | str:
    """The user to run servers as, or a reason there is none."""
    if os.geteuid() != 0:
        me = pwd.getpwuid(os.geteuid())
        return RunAs(me.pw_name, me.pw_uid, me.pw_gid)
    name = os.environ.get(ENV_USER, DEFAULT_SERVER_USER)
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return f"running as root and there is no user {name!r} to run the servers as"
    if entry.pw_uid == 0:
        return f"{ENV_USER}={name} is root; initdb refuses to run as root"
    return RunAs(entry.pw_name, entry.pw_uid, entry.pw_gid)


def _tmp_root(run_as: RunAs) -> Path | str:
    root = Path(os.environ.get(ENV_TMP) or tempfile.gettempdir())
    if not run_as.switches:
        return root if os.access(root, os.W_OK | os.X_OK) else f"cannot write to {root}"
    # The servers' user must reach its directories; a private TMPDIR (e.g. under /root)
    # would make initdb fail with a confusing permission error much later.
    probe = subprocess.run(
        ["test", "-w", str(root), "-a", "-x", str(root)], **run_as.popen_kwargs()
    )
    if probe.returncode != 0:
        return f"user {run_as.name} cannot write to {root}; set {ENV_TMP} to a shared directory"
    return root


@functools.cache
def find_binaries() -> Binaries | str:
    """Everything needed to start a plain cluster here, or the reason it cannot be."""
    bindir = find_bindir()
    if isinstance(bindir, str):
        return bindir
    run_as = find_run_as()
    if isinstance(run_as, str):
        return run_as
    root = _tmp_root(run_as)
    if isinstance(root, str):
        return root
    return Binaries(bindir=bindir, run_as=run_as, tmp_root=root)


def find_pgbouncer() -> Path | str:
    """The ``pgbouncer`` program, or a reason."""
    found = shutil.which("pgbouncer") or next(
        (p for p in ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer") if os.access(p, os.X_OK)), None
    )
    if found is None:
        return "pgbouncer is not installed (apt-get install pgbouncer)"
    return Path(found)


@functools.cache
def citus_reason(binaries: Binaries) -> str | None:
    """None when Citus ``CITUS_VERSION`` is installed for these binaries, else why not."""
    so = binaries.pkglibdir / "citus.so"
    control = binaries.sharedir / "extension" / "citus.control"
    if not so.is_file() or not control.is_file():
        return f"Citus is not installed in {so.parent} (run scripts/install-citus.sh)"
    # citus.so embeds "Citus <version> on <platform>"; the control file only names the
    # SQL version, which all 13.2.x releases share.
    if f"Citus {CITUS_VERSION} ".encode() not in so.read_bytes():
        return f"{so} is not Citus {CITUS_VERSION} (run scripts/install-citus.sh)"
    return None


def tmpfs_reason() -> str | None:
    """None when this process may mount a tmpfs (it is root), else why not."""
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    if shutil.which("mount") is None or shutil.which("umount") is None:
        return "no mount/umount programs"
    return None
