"""A primary with a streaming standby, synchronous or asynchronous.

The standby is a ``pg_basebackup -R`` of the primary (with a physical replication slot,
so the primary keeps the WAL a stopped or cut-off standby still needs). In the
synchronous pair the primary has ``synchronous_standby_names = '"<standby>"'`` and
``synchronous_commit = on``: a COMMIT returns only once the standby has flushed it. The
asynchronous pair has no ``synchronous_standby_names``.

Typical failure drills (each a method here or on :class:`~tests.clusters.cluster.PgCluster`):

- ``pair.primary.kill()`` then ``pair.standby.promote()`` (or ``pair.failover()``);
- ``pair.stop_standby()``: synchronous commits on the primary now wait; a client's
  ``statement_timeout`` or cancel ends the wait with the WARNING "canceling wait for
  synchronous replication", and the transaction *is* committed locally;
- ``pair.cut()`` / ``pair.reconnect()``: the standby stays up (and readable) but stops
  streaming, as in a network partition seen from the standby's side;
- ``pair.primary.freeze()`` / ``thaw()``: the primary hangs.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping

from .cluster import ClusterError, PgCluster, Setting, StopMode

# Settings that make sense on the primary only; a promoted standby that kept
# synchronous_standby_names would wait for a standby it does not have.
_PRIMARY_ONLY = ("synchronous_standby_names", "synchronous_commit")
# Reconnect quickly after a cut or a restart of the primary (the default is 5 s).
STANDBY_SETTINGS: dict[str, Setting] = {"wal_retrieve_retry_interval": "200ms"}


def _slot_name(name: str) -> str:
    return re.sub(r"[^a-z0-9_]", "_", name.lower())


def make_standby(
    primary: PgCluster,
    name: str = "standby",
    *,
    slot: bool = True,
    settings: Mapping[str, Setting] | None = None,
    start: bool = True,
    timeout: float = 60,
) -> PgCluster:
    """A new cluster streaming from ``primary`` (which must be running).

    Its ``application_name`` (what ``synchronous_standby_names`` and
    ``pg_stat_replication`` call it) is ``name``.
    """
    inherited = {k: v for k, v in primary.settings.items() if k not in _PRIMARY_ONLY}
    standby = PgCluster(
        name,
        settings={**inherited, **STANDBY_SETTINGS, **(settings or {})},
        binaries=primary.binaries,
    )
    try:
        slot_name = _slot_name(name) if slot else None
        args = [
            primary.binaries.tool("pg_basebackup"),
            "--host", primary.host,
            "--port", str(primary.port),
            "--username", primary.user,
            "--pgdata", str(standby.datadir),
            "--write-recovery-conf",
            "--wal-method", "stream",
            # A spread checkpoint would make the backup wait for checkpoint_timeout.
            "--checkpoint", "fast",
            "--no-sync",
        ]  # fmt: skip
        if slot_name:
            args += ["--create-slot", "--slot", slot_name]
        standby.run_tool("pg_basebackup", args, timeout=timeout)
        # -R wrote primary_conninfo (and primary_slot_name) to postgresql.auto.conf, which
        # would override agentckpt.conf; keep them with the other settings instead, so
        # cut() and reconnect() can change them.
        auto = standby.datadir / "postgresql.auto.conf"
        kept = [
            line
            for line in auto.read_text().splitlines()
            if not line.startswith(("primary_conninfo", "primary_slot_name"))
        ]
        auto.write_text("\n".join(kept) + "\n")
        standby.settings["primary_conninfo"] = conninfo_to(primary, application_name=name)
        if slot_name:
            standby.settings["primary_slot_name"] = slot_name
        standby.write_conf()
        if start:
            standby.start(timeout)
    except BaseException:
        standby.cleanup(keep_logs=True)
        raise
    return standby


def conninfo_to(primary: PgCluster, *, application_name: str) -> str:
    """The ``primary_conninfo`` a standby uses to stream from ``primary``."""
    return (
        f"host={primary.host} port={primary.port} user={primary.user} "
        f"application_name={application_name}"
    )


class ReplicatedPair:
    """A running primary and a standby streaming from it.

    :attr:`url` is a multi-host libpq URL with ``target_session_attrs=read-write``: it
    reaches whichever of the two currently accepts writes.
    """

    def __init__(self, primary: PgCluster, standby: PgCluster, *, sync: bool) -> None:
        self.primary = primary
        self.standby = standby
        self.sync = sync
        self.application_name = standby.name
        self._conninfo = str(standby.settings["primary_conninfo"])

    def __repr__(self) -> str:
        kind = "sync" if self.sync else "async"
        return f"<ReplicatedPair {kind} {self.primary!r} -> {self.standby!r}>"

    def __enter__(self) -> ReplicatedPair:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup(keep_logs=exc[0] is not None)

    def url_for(self, target_session_attrs: str = "read-write", **params: str | int) -> str:
        """A multi-host URL over both servers, primary first."""
        hosts = ",".join(f"{c.host}:{c.port}" for c in (self.primary, self.standby))
        query = "&".join(
            f"{k}={v}" for k, v in {"target_session_attrs": target_session_attrs, **params}.items()
        )
        return f"postgresql://{self.primary.user}@{hosts}/postgres?{query}"

    @property
    def url(self) -> str:
        """``postgresql://postgres@127.0.0.1:P1,127.0.0.1:P2/postgres?target_session_attrs=
        read-write&connect_timeout=2``."""
        return self.url_for(connect_timeout=2)

    def replication_state(self) -> tuple[str, str] | None:
        """``(state, sync_state)`` of the standby in the primary's pg_stat_replication."""
        rows = self.primary.sql(
            "SELECT state, sync_state FROM pg_stat_replication WHERE application_name = %s",
            [self.application_name],
        )
        return (str(rows[0][0]), str(rows[0][1])) if rows else None

    def wait_streaming(self, timeout: float = 30) -> None:
        """Wait until the standby streams (and, in a sync pair, is the sync standby)."""
        want = "sync" if self.sync else "async"
        deadline = time.monotonic() + timeout
        while True:
            state = self.replication_state()
            if state is not None and state[0] == "streaming" and state[1] == want:
                return
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"{self.standby.name} not streaming ({want}) after {timeout} s: {state}\n"
                    + self.standby.log_tail()
                )
            time.sleep(0.02)

    def wait_replayed(self, timeout: float = 30) -> None:
        """Wait until the standby has replayed everything the primary has written so far."""
        lsn = self.primary.scalar("SELECT pg_current_wal_lsn()")
        deadline = time.monotonic() + timeout
        while not self.standby.scalar("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [lsn]):
            if time.monotonic() > deadline:
                raise ClusterError(f"{self.standby.name} did not replay {lsn} in {timeout} s")
            time.sleep(0.02)

    def stop_standby(self, mode: StopMode = "fast") -> None:
        """Stop the standby (a sync primary's commits then wait for it)."""
        self.standby.stop(mode)

    def start_standby(self, *, wait: bool = True) -> None:
        """Start the standby again; by default wait until it streams."""
        self.standby.start()
        if wait:
            self.wait_streaming()

    def cut(self) -> None:
        """Stop streaming but keep the standby up: it gets an empty ``primary_conninfo``.

        Its WAL receiver exits at once; the primary's slot keeps the WAL for later.
        """
        self.standby.configure({"primary_conninfo": ""})
        deadline = time.monotonic() + 10
        while self.replication_state() is not None:
            if time.monotonic() > deadline:
                raise ClusterError(f"{self.standby.name} still streams 10 s after cut()")
            time.sleep(0.02)

    def reconnect(self, *, wait: bool = True) -> None:
        """Undo :meth:`cut`; by default wait until the standby streams again."""
        self.standby.configure({"primary_conninfo": self._conninfo})
        if wait:
            self.wait_streaming()

    def failover(self) -> None:
        """Crash the primary (SIGKILL, with its backends) and promote the standby.

        Afterwards :attr:`standby` is the read-write server and :attr:`primary` is down;
        :attr:`url` reaches the new primary.
        """
        self.primary.kill()
        self.standby.promote()

    def cleanup(self, *, keep_logs: bool | None = None) -> None:
        """Clean up both servers, the standby first."""
        self.standby.cleanup(keep_logs=keep_logs)
        self.primary.cleanup(keep_logs=keep_logs)

    @property
    def had_failure(self) -> bool:
        """True when a test using this pair failed (the pytest plugin marks both)."""
        return self.primary.had_failure or self.standby.had_failure

    @had_failure.setter
    def had_failure(self, value: bool) -> None:
        self.primary.had_failure = self.standby.had_failure = value


def start_pair(
    name: str = "pg",
    *,
    sync: bool,
    settings: Mapping[str, Setting] | None = None,
    durable: bool = True,
) -> ReplicatedPair:
    """Start a primary ``<name>-primary`` and a standby ``<name>-standby`` streaming
    from it; synchronous when ``sync``."""
    primary = PgCluster(f"{name}-primary", settings=settings, durable=durable)
    try:
        primary.init().start()
        standby = make_standby(primary, f"{name}-standby")
    except BaseException:
        primary.cleanup(keep_logs=True)
        raise
    pair = ReplicatedPair(primary, standby, sync=sync)
    try:
        if sync:
            primary.configure(
                {
                    "synchronous_standby_names": f'"{standby.name}"',
                    "synchronous_commit": "on",
                }
            )
        pair.wait_streaming()
    except BaseException:
        pair.cleanup(keep_logs=True)
        raise
    return pair
