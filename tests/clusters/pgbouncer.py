"""``PgBouncer``: PgBouncer in ``pool_mode=transaction`` in front of one server.

Each client transaction borrows a server connection and gives it back at COMMIT or
ROLLBACK, so session state does not survive between transactions: ``SET`` (without
``LOCAL``), advisory locks, ``LISTEN``, temporary tables and *server-side prepared
statements* belong to whichever server connection ran them. PgBouncer 1.18 (Debian 12)
predates ``max_prepared_statements`` (1.21), so psycopg's automatic prepared statements
(after ``prepare_threshold`` = 5 runs of one query) break through it; connect with
``prepare_threshold=None``. ``test_clusters.py`` shows both.

Authentication is ``trust``: PgBouncer lets the users in ``userlist.txt`` in without a
password and logs in to the server as them, where the fixtures' servers trust them too.
The admin console is database ``pgbouncer`` (``SHOW POOLS``...); it speaks only the simple
query protocol, so use :meth:`PgBouncer.show`.
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg

from . import resources
from .binaries import Binaries, find_pgbouncer
from .cluster import ClusterError, require_binaries, server_env
from .ports import free_port
from .processes import ProcessError, Supervised

HOST = "127.0.0.1"


class PgBouncer:
    """A running PgBouncer on a free 127.0.0.1 port, pooling for ``server_host:port``.

    Use as a context manager or call :meth:`cleanup`. ``pool_size`` is the number of server
    connections per (database, user) pair.
    """

    def __init__(
        self,
        server_host: str,
        server_port: int,
        *,
        users: Sequence[str] = ("postgres",),
        pool_mode: str = "transaction",
        pool_size: int = 5,
        name: str = "pgbouncer",
        binaries: Binaries | None = None,
    ) -> None:
        program = find_pgbouncer()
        if isinstance(program, str):
            raise ClusterError(program)
        self.program = program
        self.binaries = require_binaries(binaries)
        self.run_as = self.binaries.run_as
        self.name = name
        self.server_host = server_host
        self.server_port = server_port
        self.users = list(users)
        self.pool_mode = pool_mode
        self.pool_size = pool_size
        self.base = resources.make_base_dir(self.binaries.tmp_root, name)
        self.run_as.chown(self.base)
        self.log_path = self.base / "pgbouncer.log"
        self.port = 0
        self.process: Supervised | None = None
        self.had_failure = False
        self.kept_logs: Path | None = None
        self._cleaned = False
        resources.track(self)

    def __repr__(self) -> str:
        return f"<PgBouncer {HOST}:{self.port} -> {self.server_host}:{self.server_port}>"

    def __enter__(self) -> PgBouncer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup(keep_logs=exc[0] is not None)

    @property
    def user(self) -> str:
        """The first user in the auth file (the fixtures' superuser)."""
        return self.users[0]

    def url_for(self, dbname: str = "postgres", **params: str | int) -> str:
        """A URL through the bouncer to ``dbname`` (any database name goes to the server)."""
        query = "&".join(f"{k}={v}" for k, v in params.items())
        return f"postgresql://{self.user}@{HOST}:{self.port}/{dbname}" + (
            f"?{query}" if query else ""
        )

    @property
    def url(self) -> str:
        """``postgresql://postgres@127.0.0.1:PORT/postgres`` through the bouncer."""
        return self.url_for()

    def _write_config(self) -> Path:
        userlist = self.base / "userlist.txt"
        userlist.write_text("".join(f'"{u}" ""\n' for u in self.users))
        ini = self.base / "pgbouncer.ini"
        ini.write_text(
            "\n".join(
                [
                    "[databases]",
                    f"* = host={self.server_host} port={self.server_port}",
                    "[pgbouncer]",
                    f"listen_addr = {HOST}",
                    f"listen_port = {self.port}",
                    f"unix_socket_dir = {self.base}",
                    "auth_type = trust",
                    f"auth_file = {userlist}",
                    f"admin_users = {', '.join(self.users)}",
                    f"pool_mode = {self.pool_mode}",
                    f"default_pool_size = {self.pool_size}",
                    "max_client_conn = 200",
                    # libpq and drivers send these at startup; the server would accept them.
                    "ignore_startup_parameters = extra_float_digits, options",
                    "",
                ]
            )
        )
        for path in (userlist, ini):
            self.run_as.chown(path)
        return ini

    def start(self, timeout: float = 30) -> PgBouncer:
        """Start PgBouncer (as the servers' user: it refuses root) and wait until it
        answers on its admin console."""
        if self.process is not None and self.process.running:
            raise ClusterError("pgbouncer is already running")
        for _attempt in range(3):
            self.port = free_port()
            ini = self._write_config()
            mark = self.log_path.stat().st_size if self.log_path.exists() else 0
            self.process = Supervised(
                [str(self.program), str(ini)],
                run_as=self.run_as,
                log_path=self.log_path,
                pid_file=self.base / "keeper.pid",
                cwd=self.base,
                env=server_env(self.binaries, self.base),
            )
            deadline = time.monotonic() + timeout
            while self.process.running and time.monotonic() < deadline:
                try:
                    self.show("VERSION")
                    return self
                except psycopg.OperationalError:
                    time.sleep(0.02)
            self.process.kill_tree()
            with open(self.log_path, "rb") as log:
                log.seek(mark)
                fresh = log.read().decode(errors="replace")
            if "Address already in use" not in fresh:
                raise ClusterError(f"pgbouncer did not start:\n{fresh[-3000:]}")
        raise ClusterError("pgbouncer found no free port in 3 tries")

    def show(self, what: str) -> list[dict[str, Any]]:
        """``SHOW <what>`` on the admin console (e.g. ``POOLS``, ``CONFIG``) as dicts."""
        with psycopg.connect(
            host=HOST,
            port=self.port,
            user=self.user,
            dbname="pgbouncer",
            autocommit=True,
            connect_timeout=2,
            # ClientCursor sends the simple query protocol the admin console needs.
            cursor_factory=psycopg.ClientCursor,
        ) as conn:
            cur = conn.execute(f"SHOW {what}")  # type: ignore[call-overload]
            names = [c.name for c in cur.description or []]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    @property
    def running(self) -> bool:
        """True while the PgBouncer process is alive."""
        return self.process is not None and self.process.running

    def stop(self, timeout: float = 10) -> None:
        """Shut down at once (SIGTERM: PgBouncer's immediate shutdown)."""
        if self.process is not None and self.process.running:
            try:
                self.process.stop(signal.SIGTERM, timeout)
            except ProcessError as exc:
                raise ClusterError(str(exc)) from exc

    def log_files(self) -> list[Path]:
        """PgBouncer's log, and the config it ran with."""
        return [self.log_path, self.base / "pgbouncer.ini"]

    def cleanup(self, *, keep_logs: bool | None = None) -> None:
        """Stop PgBouncer and remove its directory; idempotent, never raises."""
        if self._cleaned:
            return
        self._cleaned = True
        try:
            if self.process is not None and self.process.running:
                with contextlib.suppress(ProcessError):  # stop() SIGKILLed it then
                    self.process.stop(signal.SIGTERM, 10)
            if keep_logs if keep_logs is not None else self.had_failure:
                self.kept_logs = resources.keep_logs(self.name, self.log_files())
        finally:
            resources.remove_tree(self.base)
            resources.untrack(self)
