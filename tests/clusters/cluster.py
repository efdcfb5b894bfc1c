"""``PgCluster``: one throwaway PostgreSQL server from the installed binaries.

A cluster lives in its own base directory (``$TMPDIR/agentckpt-cluster-<name>-XXXX``,
owned by the user that runs the servers: ``postgres`` under root) holding

- ``data/``: the data directory (``initdb``, or a ``pg_basebackup`` for a standby);
- ``.s.PGSQL.<port>``: its Unix socket (``unix_socket_directories`` is the base dir, so
  it never touches /var/run/postgresql or the system server);
- ``logs/``: ``postgresql.log`` (the server's stderr) and the output of ``initdb`` and
  friends; copied to ``$AGENTCKPT_CLUSTER_LOGS`` when a test using it failed.

It listens on 127.0.0.1 only, on a free port, with ``trust`` authentication for the
superuser ``postgres`` (whatever OS user runs it). Settings are written to
``data/agentckpt.conf``, included at the end of ``postgresql.conf``; ``ALTER SYSTEM``
still overrides them.

The postmaster runs under a keeper process (see ``_keeper.py``), so :meth:`PgCluster.kill`
returns only once the postmaster and all its backends are gone and reaped, and a killed
cluster can be started again on the same data directory at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import psycopg

from . import resources
from .binaries import Binaries, find_binaries
from .ports import free_port
from .processes import ProcessError, Supervised

Setting = str | int | float | bool
StopMode = Literal["smart", "fast", "immediate"]

SUPERUSER = "postgres"
DBNAME = "postgres"
HOST = "127.0.0.1"

# Small and quick to start: a test cluster holds little data, and two cores run several.
BASE_SETTINGS: dict[str, Setting] = {
    "listen_addresses": HOST,
    "shared_buffers": "16MB",
    "max_connections": 100,
    "huge_pages": "off",
    # JIT compiling the tests' tiny queries only costs time.
    "jit": False,
    "log_line_prefix": "%m [%p] %b %u@%d ",
    "log_replication_commands": True,
}
# For clusters whose durability no test looks at: a SIGKILLed server still recovers (the
# kernel has its writes); only a machine crash could lose data, and then the test is gone.
THROWAWAY_SETTINGS: dict[str, Setting] = {"fsync": False}

_STOP_SIGNALS: dict[str, int] = {
    "smart": signal.SIGTERM,
    "fast": signal.SIGINT,
    "immediate": signal.SIGQUIT,
}


class ClusterError(RuntimeError):
    """A cluster could not be set up, started or stopped; the message has its log tail."""


def require_binaries(binaries: Binaries | None = None) -> Binaries:
    """``binaries`` or the ones found here; raises :class:`ClusterError` with the reason."""
    found = binaries or find_binaries()
    if isinstance(found, str):
        raise ClusterError(found)
    return found


def format_setting(value: Setting) -> str:
    """A value as postgresql.conf wants it: on/off, numbers bare, strings quoted."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, int | float):
        return str(value)
    return "'" + value.replace("'", "''") + "'"


def server_env(binaries: Binaries, home: Path) -> dict[str, str]:
    """A clean environment for server programs.

    No PG* variables leak in from the caller (a PGPORT would point pg_basebackup at the
    wrong server), and the C locale keeps server messages in English for the tests.
    """
    return {
        "PATH": f"{binaries.bindir}:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": str(home),
        "LC_ALL": "C",
        "LANG": "C",
        "TZ": os.environ.get("TZ", "UTC"),
    }


class PgCluster:
    """A PostgreSQL server in a temporary directory: init, start, stop, kill, freeze.

    Create it, then :meth:`init` and :meth:`start` it (or use it as a context manager,
    which cleans up on exit). :meth:`cleanup` always stops every process and removes the
    base directory, and unmounts what :meth:`add_cleanup` registered; the ``atexit``
    safety net in :mod:`tests.clusters.resources` calls it if nobody else did.

    ``durable=False`` adds ``fsync=off``. ``waldir`` puts ``pg_wal`` elsewhere
    (``initdb --waldir``); ``datadir`` puts the data directory elsewhere (e.g. on a tmpfs
    mounted inside :attr:`base`).
    """

    def __init__(
        self,
        name: str = "pg",
        *,
        settings: Mapping[str, Setting] | None = None,
        durable: bool = True,
        datadir: Path | None = None,
        waldir: Path | None = None,
        binaries: Binaries | None = None,
    ) -> None:
        self.name = name
        self.binaries = require_binaries(binaries)
        self.run_as = self.binaries.run_as
        self.base = resources.make_base_dir(self.binaries.tmp_root, name)
        self.run_as.chown(self.base)
        self.logs = self.base / "logs"
        self.logs.mkdir()
        self.datadir = datadir or self.base / "data"
        self.waldir = waldir
        self.port = free_port()
        self.settings: dict[str, Setting] = {
            **BASE_SETTINGS,
            **({} if durable else THROWAWAY_SETTINGS),
            **(settings or {}),
        }
        self.process: Supervised | None = None
        self.frozen = False
        self.had_failure = False  # set by the pytest plugin when a test using it failed
        self.kept_logs: Path | None = None
        self._cleanups: list[Callable[[], None]] = []
        self._cleaned = False
        resources.track(self)

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<PgCluster {self.name} {HOST}:{self.port} {state} {self.base}>"

    def __enter__(self) -> PgCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup(keep_logs=exc[0] is not None)

    # ----------------------------------------------------------------- addresses

    @property
    def user(self) -> str:
        """The database superuser to connect as (trust auth, no password)."""
        return SUPERUSER

    @property
    def host(self) -> str:
        """The address the server listens on."""
        return HOST

    @property
    def socket_dir(self) -> Path:
        """The directory holding the server's Unix socket."""
        return self.base

    def url_for(self, dbname: str = DBNAME, **params: str | int) -> str:
        """A ``postgresql://`` URL for ``dbname``, with extra libpq query parameters."""
        query = "&".join(f"{k}={v}" for k, v in params.items())
        return f"postgresql://{SUPERUSER}@{HOST}:{self.port}/{dbname}" + (
            f"?{query}" if query else ""
        )

    @property
    def url(self) -> str:
        """``postgresql://postgres@127.0.0.1:PORT/postgres``."""
        return self.url_for()

    @property
    def dsn(self) -> str:
        """The same as :attr:`url`, in libpq key=value form."""
        return f"host={HOST} port={self.port} user={SUPERUSER} dbname={DBNAME}"

    # ----------------------------------------------------------------- setup

    def init(self, *initdb_args: str) -> PgCluster:
        """Run ``initdb`` (trust auth, UTF8, C locale) and write the settings."""
        args = [
            self.binaries.tool("initdb"),
            "--pgdata",
            str(self.datadir),
            "--username",
            SUPERUSER,
            "--auth",
            "trust",
            "--encoding",
            "UTF8",
            "--locale",
            "C",
            # Syncing a throwaway cluster's 40 MB to disk is most of initdb's time.
            "--no-sync",
        ]
        if self.waldir is not None:
            args += ["--waldir", str(self.waldir)]
        self.run_tool("initdb", [*args, *initdb_args])
        with open(self.datadir / "postgresql.conf", "a") as conf:
            conf.write("\ninclude 'agentckpt.conf'\n")
        self.write_conf()
        return self

    def write_conf(self) -> None:
        """(Re)write ``agentckpt.conf`` from :attr:`settings` plus port, socket and name."""
        lines = ["# Written by tests/clusters/cluster.py; rewritten on every change."]
        merged = {
            **self.settings,
            "port": self.port,
            "unix_socket_directories": str(self.socket_dir),
            "cluster_name": self.name,
        }
        if self.private_ipc:
            merged.setdefault("dynamic_shared_memory_type", "sysv")
        lines += [f"{key} = {format_setting(value)}" for key, value in merged.items()]
        path = self.datadir / "agentckpt.conf"
        path.write_text("\n".join(lines) + "\n")
        self.run_as.chown(path)

    def configure(self, settings: Mapping[str, Setting], *, reload: bool = True) -> None:
        """Change settings; reload a running server (a restart is up to the caller)."""
        self.settings.update(settings)
        self.write_conf()
        if reload and self.running:
            self.sql("SELECT pg_reload_conf()")

    def unset(self, *names: str, reload: bool = True) -> None:
        """Drop settings back to the server's defaults; reload a running server."""
        for name in names:
            self.settings.pop(name, None)
        self.write_conf()
        if reload and self.running:
            self.sql("SELECT pg_reload_conf()")

    def run_tool(
        self, log_name: str, argv: Sequence[str], *, timeout: float = 120
    ) -> subprocess.CompletedProcess[bytes]:
        """Run a PostgreSQL program as the server user; its output goes to ``logs/``.

        Raises :class:`ClusterError` with the output's tail when it fails.
        """
        log_path = self.logs / f"{log_name}.log"
        with open(log_path, "ab") as log:
            log.write(f"$ {' '.join(argv)}\n".encode())
            log.flush()
            done = subprocess.run(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.base,
                env=server_env(self.binaries, self.base),
                timeout=timeout,
                check=False,
                **self.run_as.popen_kwargs(),
            )
        if done.returncode != 0:
            raise ClusterError(
                f"{self.name}: {Path(argv[0]).name} exited {done.returncode}:\n"
                + _tail(log_path, 30)
            )
        return done

    # ----------------------------------------------------------------- lifecycle

    @property
    def running(self) -> bool:
        """True while the postmaster (or any of its processes) is alive."""
        return self.process is not None and self.process.running

    @property
    def log_path(self) -> Path:
        """The server's log (its stderr, appended across restarts)."""
        return self.logs / "postgresql.log"

    @property
    def postmaster_pid(self) -> int | None:
        """The postmaster's pid while it runs."""
        return self.process.pid if self.running and self.process else None

    def start(self, timeout: float = 60) -> PgCluster:
        """Start the server and wait until it accepts connections (or is a ready standby).

        A port taken by someone else meanwhile is retried with a fresh one.
        """
        if self.running:
            raise ClusterError(f"{self.name} is already running")
        for _attempt in range(3):
            mark = self.log_path.stat().st_size if self.log_path.exists() else 0
            self.process = Supervised(
                [self.binaries.tool("postgres"), "-D", str(self.datadir)],
                run_as=self.run_as,
                log_path=self.log_path,
                pid_file=self.base / "keeper.pid",
                cwd=self.base,
                env=server_env(self.binaries, self.base),
                private_ipc=self.private_ipc,
            )
            if self._wait_ready(timeout):
                self.frozen = False
                return self
            fresh = _read_from(self.log_path, mark)
            if "could not bind" in fresh or "Address already in use" in fresh:
                self.port = free_port()
                self.write_conf()
                continue
            break
        raise ClusterError(f"{self.name} did not start:\n" + _tail(self.log_path, 40))

    @property
    def private_ipc(self) -> bool:
        """Whether the server gets its own SysV IPC namespace (only root may).

        With it, ``dynamic_shared_memory_type=sysv`` keeps all of a server's shared memory
        inside the namespace, so even a SIGKILLed server leaks none.
        """
        return os.geteuid() == 0

    def _wait_ready(self, timeout: float) -> bool:
        assert self.process is not None
        pidfile = self.datadir / "postmaster.pid"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.process.running:
                return False
            try:
                lines = pidfile.read_text().splitlines()
            except OSError:
                lines = []
            # postmaster.pid: pid, datadir, start time, port, socket dir, listen address,
            # shmem key, status ("starting", "stopping", "ready" or "standby").
            if (
                len(lines) >= 8
                and lines[0] == str(self.process.pid)
                and lines[7].strip() in ("ready", "standby")
            ):
                return True
            time.sleep(0.02)
        self.process.kill_tree()
        raise ClusterError(f"{self.name} not ready after {timeout} s:\n" + _tail(self.log_path, 40))

    def stop(self, mode: StopMode = "fast", timeout: float = 60) -> None:
        """Shut down: ``smart`` waits for clients, ``fast`` disconnects them,
        ``immediate`` quits without a checkpoint (crash recovery at next start)."""
        if self.process is None:
            return
        try:
            if self.process.running:
                self.process.stop(_STOP_SIGNALS[mode], timeout)
        except ProcessError as exc:
            raise ClusterError(f"{self.name}: {exc}\n" + _tail(self.log_path, 40)) from exc
        finally:
            self.frozen = False

    def restart(self, mode: StopMode = "fast", timeout: float = 60) -> PgCluster:
        """Stop (``mode``) and start again on the same data directory and port."""
        self.stop(mode, timeout)
        return self.start(timeout)

    def kill(self, *, backends: bool = True) -> None:
        """SIGKILL the postmaster, as a crash would; returns once every process is gone.

        ``backends=True`` (default) SIGKILLs the backends too, like a machine losing power:
        nothing more reaches the disk or the network. ``backends=False`` kills only the
        postmaster, like the OOM killer would; its backends notice and exit by themselves.
        """
        if not self.running or self.process is None:
            return
        if backends:
            self.process.kill_tree()
        else:
            self.process.thaw()  # stopped orphans could never notice and exit
            self.process.signal(signal.SIGKILL)
            if self.process.wait(30) is None:
                self.process.kill_tree()
                raise ClusterError(f"{self.name}: backends outlived the postmaster by 30 s")
        self.frozen = False

    def freeze(self) -> list[int]:
        """SIGSTOP the postmaster and all its backends (a hung machine); their pids.

        Connections then hang rather than fail: use ``connect_timeout`` and
        ``statement_timeout`` on clients. :meth:`thaw`, :meth:`stop`, :meth:`kill` and
        :meth:`cleanup` all resume or end a frozen server.
        """
        if not self.running or self.process is None:
            raise ClusterError(f"{self.name} is not running")
        pids = self.process.freeze()
        self.frozen = True
        return pids

    def thaw(self) -> None:
        """SIGCONT everything :meth:`freeze` stopped."""
        if self.process is not None:
            self.process.thaw()
        self.frozen = False

    def promote(self, timeout: float = 60) -> None:
        """``pg_ctl promote`` a standby and wait until it accepts writes."""
        self.run_tool(
            "pg_ctl",
            [
                self.binaries.tool("pg_ctl"),
                "promote",
                "--pgdata",
                str(self.datadir),
                "--wait",
                "--timeout",
                str(int(timeout)),
            ],
            timeout=timeout + 10,
        )

    # ----------------------------------------------------------------- SQL

    def connect(self, dbname: str = DBNAME, **kwargs: Any) -> psycopg.Connection[Any]:
        """A new psycopg connection (autocommit unless told otherwise); close it."""
        kwargs.setdefault("autocommit", True)
        kwargs.setdefault("connect_timeout", 10)
        return psycopg.connect(host=HOST, port=self.port, user=SUPERUSER, dbname=dbname, **kwargs)

    def sql(
        self,
        query: str,
        params: Sequence[Any] | Mapping[str, Any] | None = None,
        *,
        dbname: str = DBNAME,
    ) -> list[tuple[Any, ...]]:
        """Run one statement on a short-lived autocommit connection; its rows, if any."""
        with self.connect(dbname) as conn, conn.cursor() as cur:
            cur.execute(query, params)  # type: ignore[arg-type]  # tests pass plain str
            return cur.fetchall() if cur.description else []

    def scalar(
        self,
        query: str,
        params: Sequence[Any] | Mapping[str, Any] | None = None,
        *,
        dbname: str = DBNAME,
    ) -> Any:
        """The first column of the first row of :meth:`sql`."""
        rows = self.sql(query, params, dbname=dbname)
        return rows[0][0] if rows else None

    def in_recovery(self) -> bool:
        """True on a standby (``pg_is_in_recovery()``)."""
        return bool(self.scalar("SELECT pg_is_in_recovery()"))

    # ----------------------------------------------------------------- teardown

    def add_cleanup(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` at :meth:`cleanup`, after the server stopped (newest first)."""
        self._cleanups.append(fn)

    def log_files(self) -> list[Path]:
        """Every log this cluster wrote (server and tools)."""
        return sorted(self.logs.glob("*.log")) if self.logs.exists() else []

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines of the server log."""
        return _tail(self.log_path, lines)

    def cleanup(self, *, keep_logs: bool | None = None) -> None:
        """Stop every process, run the registered cleanups, remove the base directory.

        Logs are copied to :func:`resources.logs_root` first when ``keep_logs`` (default:
        when a test using this cluster failed); :attr:`kept_logs` says where. Idempotent;
        never raises.
        """
        if self._cleaned:
            return
        self._cleaned = True
        try:
            if self.process is not None and self.process.running:
                # Immediate: nothing here needs a checkpoint, and it frees shared memory.
                # A ProcessError means stop() already SIGKILLed the lot.
                with contextlib.suppress(ProcessError):
                    self.process.stop(signal.SIGQUIT, 10)
            if keep_logs if keep_logs is not None else self.had_failure:
                self.kept_logs = resources.keep_logs(self.name, self.log_files())
            for fn in reversed(self._cleanups):
                try:
                    fn()
                except Exception as exc:  # the rest must still run
                    print(f"{self.name}: cleanup step failed: {exc}")
        finally:
            resources.remove_tree(self.base)
            resources.untrack(self)


def _read_from(path: Path, offset: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _tail(path: Path, lines: int) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"(no {path.name})"
    return "\n".join(text.splitlines()[-lines:])
