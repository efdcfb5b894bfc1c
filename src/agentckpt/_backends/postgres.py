# GENERATED from postgres_async.py by scripts/unasync.py; do not edit.
"""PostgreSQL backend on psycopg 3 and psycopg_pool (async source of the sync twin).

``postgres_sync.py`` is generated from this file by ``scripts/unasync.py``; edit this one.

Connections are ``autocommit=True`` and this class opens every transaction itself: on a
non-autocommit connection one earlier SELECT would turn each later ``transaction()``
block into a mere savepoint that nothing ever commits.

Every call but a migration runs under a client-side deadline (``deadline``): past it the
statement is cancelled, the connection cut if the server does not answer (a frozen
server), and discarded; a write then raises ``OutcomeUnknownError``, a read
``UnavailableError``. A commit whose wait for a synchronous standby was cancelled (by the
deadline or anyone else: PostgreSQL's WARNING "canceling wait for synchronous
replication") is durable on the primary only, so it raises ``OutcomeUnknownError`` too,
never success. ``KeyboardInterrupt`` and task cancellation during a write propagate as
they are, with a note saying the write's outcome is unknown.
"""

from __future__ import annotations

import logging
import math
import secrets
import time
import weakref
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import ExecStatus, TransactionStatus
from psycopg.rows import TupleRow, dict_row, tuple_row
from psycopg_pool import ConnectionPool, PoolTimeout
from psycopg_pool.base import AttemptWithBackoff

from agentckpt import _compat
from agentckpt._backends.base import Params
from agentckpt._backends.distribution import Layout, LayoutReport, describe, lay_out
from agentckpt._backends.options import PostgresOptions
from agentckpt._backends.pg_arrays import (
    register_arrays,
)
from agentckpt._backends.pg_errors import (
    Retry,
    connect_failure_is_final,
    connect_reason,
    retry_kind,
    translate,
)
from agentckpt._backends.pg_params import (
    batch_params,
    chain_landed,
    chain_params,
    chain_query,
    chainable,
)
from agentckpt._backends.routing import ShardRouter
from agentckpt._backends.sql import load_migrations, load_queries, positional_sql
from agentckpt._core.durability import WEAK_SETTINGS_QUERY, Weakness, weak_settings
from agentckpt._core.writes import (
    CommitOutcome,
    Committed,
    Refused,
    Row,
    StepWrite,
    layers,
)
from agentckpt.errors import (
    ConfigurationError,
    MigrationError,
    OutcomeUnknownError,
    UnavailableError,
)
from agentckpt.tenancy.names import DEFAULT_TENANT, TENANT_SETTING, check_tenant

T = TypeVar("T")
log = logging.getLogger("agentckpt.store")
# Citus when installed, no partitions: the layout of a store URL without settings.
DEFAULT_LAYOUT = Layout()
Conn = psycopg.Connection[Row]

# The first statement of every transaction on a connection that does not carry the
# store's tenant for its whole session (see _SESSION_TENANT): the tenant row-level
# security binds the transaction to.
SET_TENANT = f"SELECT set_config('{TENANT_SETTING}', %(tenant)s, true)"
# A custom setting each pool sends at connect with a value of its own (a nonce): reading
# it back proves the server session was started from this pool's startup packet, so it
# also holds the tenant sent there. A pooler that drops libpq's options (PgBouncer) or
# lends another session answers something else.
SESSION_SETTING = "agentckpt.session"
# Connections whose server session carries a tenant from its start (libpq options
# -c agentckpt.tenant=...), verified when the pool opened them: the tenant's session value.
# It cannot change afterwards: agentckpt never sets it at session level, a rolled back
# transaction does not touch it, and RESET ALL / DISCARD ALL return to it. A statement on
# such a connection for the same tenant needs no set_config first.
_SESSION_TENANT: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
# libpq 14+ pipelines; an older one sets the tenant in an explicit transaction instead
# (one more round trip for BEGIN and one for COMMIT).
_PIPELINE = psycopg.Pipeline.is_supported()

# libpq's connect_timeout when the URL sets none (psycopg's own default is 130 s, so a
# frozen host of a multi-host URL would hold every reconnect that long).
DEFAULT_CONNECT_TIMEOUT = 5
# What PostgreSQL says when a commit stops waiting for its synchronous standby (a cancel,
# or a termination); the transaction is then committed locally only.
_SYNC_WAIT_CANCELLED = "canceling the wait for synchronous replication"
_SYNC_WAIT_CANCELLED_USER = "canceling wait for synchronous replication"
# Connections on which that notice arrived since the current call began.
_UNCONFIRMED: weakref.WeakSet[Any] = weakref.WeakSet()
# Added to a KeyboardInterrupt or cancellation that interrupts a write.
INTERRUPTED_WRITE_NOTE = (
    "agentckpt: a PostgreSQL write was in flight; its outcome is unknown, as with "
    "OutcomeUnknownError: retry the same commit (it is idempotent)"
)


class StepConnection(psycopg.Connection[Row]):
    """A pooled connection that keeps one raw cursor for the lone commit.

    ``conn.execute`` builds a cursor each call, and with it a transformer that looks up
    the dumper of each parameter type and the loader of each column again; the named
    placeholders cost a mapping to positions too. The lone commit (``commit_step``) runs
    instead on this cursor, the same one every time on a connection (its dumpers and
    loaders stay cached; a cursor's ``execute`` resets its results), with ``$n``
    placeholders and tuple rows. The pool hands a connection to one caller at a time, so
    no two statements share the cursor.
    """

    _commit_cursor: psycopg.RawCursor[TupleRow] | None = None

    def commit_cursor(self) -> psycopg.RawCursor[TupleRow]:
        """This connection's cursor for the lone commit, made on first use."""
        cur = self._commit_cursor
        if cur is None:
            cur = self._commit_cursor = psycopg.RawCursor(self, row_factory=tuple_row)
        return cur


def commit_cursor(conn: Conn) -> psycopg.RawCursor[TupleRow]:
    """The raw cursor the lone commit runs on: the connection's own if it keeps one (a
    pool of :func:`PostgresBackend.connect` makes those), else a new one."""
    if isinstance(conn, StepConnection):
        return conn.commit_cursor()
    return psycopg.RawCursor(conn, row_factory=tuple_row)


def session_options(tenant: str, nonce: str) -> str:
    """The libpq ``-c`` options that give a new session the store's tenant (and the pool's
    nonce, which proves it later). A tenant name has no space or quote (check_tenant)."""
    return f"-c {TENANT_SETTING}={check_tenant(tenant)} -c {SESSION_SETTING}={nonce}"


def configure_for(tenant: str, nonce: str | None) -> Callable[[Conn], None]:
    """The pool's set-up of each new connection; with a ``nonce`` (the options of
    :func:`session_options` were sent) it records the connection in ``_SESSION_TENANT``
    when the server session reports both values back."""

    def configure(conn: Conn) -> None:
        # Timestamps come back in UTC, as on SQLite, whatever the server's default or PGTZ
        # says (a -c timezone=UTC startup option loses to PGTZ).
        conn.execute("SET TIME ZONE 'UTC'")
        register_arrays(conn)
        watch_sync_wait(conn)
        if nonce is not None:
            bind_session(conn, tenant, nonce)

    return configure


def bind_session(conn: Conn, tenant: str, nonce: str) -> bool:
    """Record ``conn`` as carrying ``tenant`` for its session if the server says so and
    says the session started with this pool's ``nonce``; True when recorded."""
    cur = conn.execute(
        f"SELECT current_setting('{TENANT_SETTING}', true) AS tenant, "
        f"current_setting('{SESSION_SETTING}', true) AS nonce"
    )
    row = cur.fetchone()
    if row is not None and row["nonce"] == nonce and row["tenant"] == tenant:
        _SESSION_TENANT[conn] = tenant
        return True
    _SESSION_TENANT.pop(conn, None)
    return False


def watch_sync_wait(conn: Any) -> None:
    """Note on ``conn`` when a commit's wait for the synchronous standby is cancelled."""
    ref = weakref.ref(conn)

    def on_notice(diagnostic: psycopg.errors.Diagnostic) -> None:
        text = diagnostic.message_primary or ""
        if text.startswith((_SYNC_WAIT_CANCELLED, _SYNC_WAIT_CANCELLED_USER)):
            owner = ref()
            if owner is not None:
                _UNCONFIRMED.add(owner)

    conn.add_notice_handler(on_notice)


class _Backoff(AttemptWithBackoff):
    """psycopg_pool's reconnect backoff with agentckpt's first delay and a ceiling."""

    def __init__(self, *, timeout: float, initial: float, maximum: float) -> None:
        super().__init__(timeout=timeout)
        self.INITIAL_DELAY = initial
        self._maximum = maximum

    def update_delay(self, now: float) -> None:
        super().update_delay(now)
        self.delay = min(self.delay, self._maximum)


class ReconnectingPool(ConnectionPool[Conn]):
    """A pool that replaces a lost connection after ``reconnect_delays`` (first, most)
    seconds, doubling, instead of psycopg_pool's fixed 1 s, 2 s, 4 s, ... which can
    leave an agent waiting many seconds after a new primary is up; and that hands out
    the idle connection returned last (see :meth:`_get_ready_connection`)."""

    def __init__(self, *args: Any, reconnect_delays: tuple[float, float], **kwargs: Any):
        self._reconnect_delays = reconnect_delays
        super().__init__(*args, **kwargs)

    def _add_connection(self, attempt: AttemptWithBackoff | None, growing: bool = False) -> None:
        if attempt is None:
            initial, maximum = self._reconnect_delays
            attempt = _Backoff(timeout=self.reconnect_timeout, initial=initial, maximum=maximum)
        super()._add_connection(attempt, growing=growing)

    def _get_ready_connection(self, wait: float | None) -> Conn | None:
        # Last in, first out: psycopg_pool hands out the connection idle longest, so a
        # lone agent's steps cycled through every pooled connection and woke a cold
        # server backend for each commit (with pool_min=10, a 30-key step took 0.9 ms
        # instead of 0.65, and 0.1 ms more client CPU). The one returned last goes
        # first; the others keep their order, the one idle longest first to be closed
        # when the pool shrinks.
        idle = self._pool
        if len(idle) > 1:
            idle.rotate(1)
        return super()._get_ready_connection(wait)  # psycopg_pool passes its timeout


def _first_connect(conninfo: str, bound: float) -> None:
    """Connect once, directly, before the pool opens, so a URL that cannot work fails
    within ``bound`` seconds with libpq's (or the server's) own reason, instead of the pool
    retrying for its whole wait and logging a warning for every attempt.

    A server that is unreachable or not yet accepting connections is tried again until the
    bound; a bad URL value, an unknown role or database, a refused password fail at once.
    """
    deadline = time.monotonic() + bound
    pause = 0.05
    while True:
        # libpq rounds connect_timeout up to 2 s; it bounds each attempt (a silent host).
        per_attempt = max(2, math.ceil(deadline - time.monotonic()))
        try:
            conn = psycopg.Connection.connect(conninfo, connect_timeout=per_attempt)
        except psycopg.Error as exc:
            reason = connect_reason(exc)
            if connect_failure_is_final(exc):
                raise ConfigurationError(f"cannot connect to PostgreSQL: {reason}") from None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise UnavailableError(
                    f"could not connect to PostgreSQL within {bound:g} s: {reason}"
                ) from None
            _compat.sleep(min(pause, remaining))
            pause = min(pause * 2, 1.0)
            continue
        conn.close()
        return


def check_search_path(conn: Conn, schema: str) -> None:
    """Fail unless the server gave the connection the store's schema first in its
    search_path: a pooler that drops libpq's ``options`` startup parameter (PgBouncer's
    ``ignore_startup_parameters = options``) would otherwise send every statement to
    ``public``, silently sharing tables with any other store there."""
    cur = conn.execute("SELECT current_setting('search_path') AS path")
    row = cur.fetchone()
    path = str(row["path"]) if row else ""
    first = path.split(",")[0].strip().strip('"')
    if first != schema:
        info = conn.info
        raise ConfigurationError(
            f"the server runs this store's connections with search_path={path!r}, not "
            f"{schema!r}: the options=-c search_path=... agentckpt sends at connect were "
            "dropped on the way (PgBouncer with ignore_startup_parameters = options does "
            f"that). Set it on the server instead: ALTER ROLE {info.user} IN DATABASE "
            f"{info.dbname} SET search_path = {schema}; (docs/scaling.md, "
            "'PgBouncer')"
        )


def warn_if_weak(conn: Conn) -> list[Weakness]:
    """Log one WARNING (logger ``agentckpt.store``) when ``conn``'s session runs with a
    setting under which PostgreSQL can lose a commit it acknowledged (``fsync`` or
    ``full_page_writes`` off, ``synchronous_commit = off``, or ``local`` while
    synchronous standbys are configured); the weaknesses found.

    One query, on the pool's first connection: every connection of the pool starts
    with the same URL, role and database, so the settings the session sees (the
    server's, a role's or database's ``ALTER ... SET``, the URL's ``options=-c ...``)
    are the ones every commit runs under (until a failover moves the URL to a server
    configured otherwise: the next store to connect sees that). A warning, not a
    refusal: the store works,
    and ``agentckpt doctor`` (which applies the same rules) is the gate to fail a
    deployment on.
    """
    cur = conn.execute(WEAK_SETTINGS_QUERY)
    row = cur.fetchone()
    found = weak_settings(row or {})
    if found:
        info = conn.info
        log.warning(
            "PostgreSQL at %s:%s, database %s, runs this store's connections with "
            "settings that can lose acknowledged commits: %s. agentckpt doctor lists "
            "every durability check",
            info.host,
            info.port,
            info.dbname,
            "; ".join(weakness.describe() for weakness in found),
        )
    return found


# Reads whose results come in binary: the steps' payloads and checksums (bytea) arrive
# as their bytes, not as hex text twice their size that the client unescapes, and every
# column these return has a binary loader that gives the text loader's value (no json
# or jsonb: a run's config is bytea, its metadata is cast to text).
_BINARY_READS = frozenset({"resume_run", "load_chain"})

# Reads prepared on their first run on a connection, not psycopg's sixth: each pooled
# connection plans a statement it has not prepared on every run (0.16 to 0.3 ms for
# resume_run, whose execution takes about 0.05 to 0.1), and a 10-connection pool ran
# the first 50 resumes of a process unprepared, and 50 more with the custom plans the
# server tries before a generic one. A prepare_threshold of none still prepares nothing.
_PREPARED_READS = frozenset({"resume_run", "load_chain"})


def _has_rows(cur: Any) -> bool:
    """Whether the statement returned a result set (what ``cur.description`` says, without
    building its 30-odd ``Column`` objects on every read)."""
    res = cur.pgresult
    return res is not None and (res.nfields > 0 or res.status == ExecStatus.TUPLES_OK)


# Named queries Citus cannot run, and the driver's variant it runs instead on a
# distributed store (same parameters, same rows back).
CITUS_VARIANTS = {"runs_claim_orphans": "routed_claim_orphans"}


def is_distributed(conn: Conn) -> bool:
    """True when the store's ``runs`` table is distributed by Citus."""
    cur = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS citus"
    )
    row = cur.fetchone()
    if not row or not row["citus"]:
        return False
    cur = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_dist_partition "
        "WHERE logicalrelid = to_regclass('runs') AND partmethod = 'h') AS distributed"
    )
    row = cur.fetchone()
    return bool(row and row["distributed"])


class PostgresBackend:
    """A pool of autocommit connections to one PostgreSQL schema.

    Connection failures are retried ``attempts`` times with backoff; this is safe for
    commits because the store's commits are idempotent. Serialization failures and
    deadlocks (SQLSTATE 40001, 40P01) are retried the same way.
    """

    dialect = "postgresql"

    def __init__(
        self,
        pool: ConnectionPool[Conn],
        *,
        schema: str,
        attempts: int = 4,
        backoff: float = 0.05,
        wait: float = 30.0,
        deadline: float = 15.0,
        tenant: str = DEFAULT_TENANT,
        layout: Layout = DEFAULT_LAYOUT,
        pipeline: bool = True,
    ) -> None:
        self._pool = pool
        # Off behind a transaction pooler (prepare_threshold=none): PgBouncer before 1.21
        # can lose count of a pipeline's results and keep its one server connection
        # "not ready", linked to this client, so every other client waits on it.
        self._pipeline = pipeline and _PIPELINE
        self.tenant = check_tenant(tenant)
        self.schema = schema
        self._attempts = attempts
        self._backoff = backoff
        self._wait = wait
        self.deadline = deadline
        self._queries = load_queries("postgres")
        self._commit_step = positional_sql(self._queries["commit_step"])
        self._commit_step_plain = positional_sql(self._queries["commit_step_plain"])
        self.layout = layout
        # What the last migrate found; None until then (or when opened without migrating).
        self.layout_report: LayoutReport | None = None
        # On a Citus store (known at the first commit, or after migrate), batches go
        # through the router; None: not known yet.
        self._router: ShardRouter | None = None
        self._distributed: bool | None = None
        # Each batch in flight holds a connection: at most one per pooled connection.
        self.max_batches = pool.max_size

    @classmethod
    def connect(
        cls, conninfo: str, options: PostgresOptions = PostgresOptions()
    ) -> PostgresBackend:
        """Open a pool; ``options.wait`` bounds the first connection and every checkout.

        ``conninfo`` is passed to libpq as it is; a URL libpq cannot parse is a
        :class:`ConfigurationError` at once. Its own ``options`` parameter is kept:
        agentckpt appends its ``search_path`` and ``lock_timeout`` to it.
        """
        try:
            params = conninfo_to_dict(conninfo)
        except psycopg.ProgrammingError as exc:
            raise ConfigurationError(f"libpq cannot parse the store URL: {exc}") from None
        own = f"-c search_path={options.schema} -c lock_timeout=10s"
        # The session carries the tenant from its start, so a statement needs no
        # set_config before it, except where a session is not the client's own:
        # prepare_threshold=none is the PgBouncer transaction-mode setting
        # (docs/scaling.md), where every transaction sets its tenant as before.
        nonce = secrets.token_hex(8) if options.prepare_threshold is not None else None
        if nonce is not None:
            own = f"{own} {session_options(options.tenant, nonce)}"
        user_options = params.get("options")
        _first_connect(conninfo, options.connect_wait)
        kwargs: dict[str, Any] = {
            "autocommit": True,
            "row_factory": dict_row,
            "options": f"{user_options} {own}" if user_options else own,
            "prepare_threshold": options.prepare_threshold,
        }
        if "connect_timeout" not in params:
            kwargs["connect_timeout"] = DEFAULT_CONNECT_TIMEOUT
        pool = ReconnectingPool(
            conninfo,
            connection_class=StepConnection,
            min_size=options.pool_min,
            max_size=options.pool_max,
            timeout=options.wait,
            open=False,
            kwargs=kwargs,
            name=f"agentckpt-{options.schema}",
            configure=configure_for(options.tenant, nonce),
            reconnect_delays=(options.reconnect_initial_delay, options.reconnect_max_delay),
        )
        try:
            pool.open(wait=True, timeout=options.wait)
        except PoolTimeout as exc:
            pool.close()
            raise UnavailableError(
                f"could not connect to PostgreSQL within {options.wait:g} s; check the URL "
                "and that the server is up"
            ) from exc
        try:
            with pool.connection(timeout=options.wait) as conn:
                check_search_path(conn, options.schema)
                warn_if_weak(conn)
        except BaseException:
            pool.close()
            raise
        return cls(
            pool,
            schema=options.schema,
            wait=options.wait,
            deadline=options.deadline,
            tenant=options.tenant,
            layout=Layout(options.distribute, options.partitions),
            pipeline=options.prepare_threshold is not None,
        )

    def _run(self, fn: Callable[[Conn], T], *, writing: bool, bounded: bool = True) -> T:
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._checked_out(fn, writing=writing, bounded=bounded)
            except PoolTimeout as exc:
                raise UnavailableError(
                    f"no PostgreSQL connection free or reachable within {self._wait:g} s"
                ) from exc
            except psycopg.Error as exc:
                kind = retry_kind(exc)
                if kind is Retry.NO or attempt >= self._attempts:
                    raise translate(exc, writing=writing) from exc
                if kind is Retry.CONNECTION:
                    # One lost connection often means more (a restart, a failover, a
                    # terminated group): a pipelined call meets a dead idle connection
                    # only as it syncs, so the pool drops every dead one before the retry.
                    self._pool.check()
                _compat.sleep(self._backoff * 2 ** (attempt - 1))
            except BaseException as exc:
                if writing and not isinstance(exc, Exception):
                    exc.add_note(INTERRUPTED_WRITE_NOTE)
                raise

    def _checked_out(self, fn: Callable[[Conn], T], *, writing: bool, bounded: bool) -> T:
        """Run ``fn`` on a connection checked out of the pool, and return it there.

        ``getconn`` and ``putconn`` rather than ``pool.connection()``: that context
        manager also enters the connection's own context, whose exit takes the
        connection's lock to commit (a no-op on these autocommit connections, whose
        every transaction this class closes itself), which was about a tenth of the
        backend's client CPU for a lone step. ``putconn`` still rolls back a
        connection left in a transaction and replaces a broken one. (The pool's
        ``usage_ms`` statistic, which ``connection()`` adds to through the pool's private
        attributes, no longer counts these uses; nothing here reads it.)
        """
        pool = self._pool
        conn = pool.getconn(timeout=self._wait)
        try:
            if not bounded:
                return fn(conn)
            return self._bounded(conn, fn, writing=writing)
        finally:
            pool.putconn(conn)

    def _bounded(self, conn: Conn, fn: Callable[[Conn], T], *, writing: bool) -> T:
        """Run ``fn`` under the deadline; a call past it, or a commit its synchronous
        standby did not confirm, raises the typed error and never returns the connection
        to the pool in use again."""
        _UNCONFIRMED.discard(conn)
        watch = _compat.Deadline(conn, self.deadline)
        try:
            with watch:
                result = fn(conn)
        except psycopg.Error as exc:
            if not watch.expired:
                raise
            self._discard(conn)
            raise self._late(writing) from exc
        if watch.expired:
            # It returned, but a cancel request may still be on its way to the server.
            self._discard(conn)
        if writing and conn in _UNCONFIRMED:
            _UNCONFIRMED.discard(conn)
            raise OutcomeUnknownError(
                "PostgreSQL committed on the primary, but the wait for the synchronous "
                "standby was cancelled ('canceling wait for synchronous replication'): a "
                "failover now could lose the write. Retry the same commit: it is "
                "idempotent, and the retry waits for the standby"
            )
        return result

    def _carries_tenant(self, conn: Conn) -> bool:
        """True when ``conn``'s session carries this store's tenant (``_SESSION_TENANT``)
        on a store whose tables are not distributed: a statement then runs alone.

        Citus runs a statement's shard tasks on its workers, through sessions of its
        own that need not carry the coordinator session's startup options, so a
        distributed store keeps setting the tenant in each transaction, as before.
        """
        if _SESSION_TENANT.get(conn) != self.tenant:
            return False
        if self._distributed is None:
            self._distributed = is_distributed(conn)
        return not self._distributed

    def _scoped(
        self,
        conn: Conn,
        sql: str,
        params: Params,
        *,
        binary: bool = False,
        prepare: bool | None = None,
    ) -> list[Row]:
        """Run one statement in one transaction bound to the store's tenant (see
        :meth:`_scoped_on`), on a new cursor of ``conn``."""
        return self._scoped_on(conn, conn.cursor(), sql, params, binary=binary, prepare=prepare)

    def _scoped_on(
        self,
        conn: Conn,
        cur: psycopg.Cursor[T],
        sql: str,
        params: Params | tuple[Any, ...],
        *,
        binary: bool = False,
        prepare: bool | None = None,
    ) -> list[T]:
        """Run one statement on ``cur`` (a cursor of ``conn``) in one transaction bound
        to the store's tenant.

        On a connection whose session carries the tenant (``_carries_tenant``) the
        statement is sent alone: one round trip, its own autocommit transaction.
        Otherwise the transaction's first statement sets it: ``set_config(..., true)`` is
        transaction-local, it ends with the transaction, so a server connection that
        PgBouncer's transaction pooling lends to others never carries this store's
        tenant to its next user. In pipeline mode both statements go in one round trip
        and run in the implicit transaction that ends at the pipeline's sync (committed
        then, as an autocommit statement is).
        """
        if self._carries_tenant(conn):
            cur.execute(sql, params, binary=binary, prepare=prepare)
            return cur.fetchall() if _has_rows(cur) else []
        if self._pipeline:
            try:
                # Leaving the block sends the one sync and reads every result.
                with conn.pipeline():
                    conn.execute(SET_TENANT, {"tenant": self.tenant})
                    cur.execute(sql, params, binary=binary, prepare=prepare)
                return cur.fetchall() if _has_rows(cur) else []
            except BaseException:
                # A connection lost (or interrupted) mid-pipeline can look busy rather than
                # broken to the pool, which would hand it out again: close it, so the pool
                # replaces it. After a plain SQL error it is idle again and is kept.
                if not conn.closed and (
                    conn.broken or conn.info.transaction_status != TransactionStatus.IDLE
                ):
                    conn.close()
                raise
        with conn.transaction():
            conn.execute(SET_TENANT, {"tenant": self.tenant})
            cur.execute(sql, params, binary=binary, prepare=prepare)
            return cur.fetchall() if _has_rows(cur) else []

    def _discard(self, conn: Conn) -> None:
        conn.close()
        # A server that missed one deadline is likely frozen: every other connection to
        # it would hang as long, so the pool replaces them all.
        self._pool.drain()

    def _late(self, writing: bool) -> Exception:
        if writing:
            return OutcomeUnknownError(
                f"PostgreSQL did not answer within the {self.deadline:g} s deadline; the "
                "connection was discarded and the write may or may not be durable: retry "
                "the same commit, it is idempotent"
            )
        return UnavailableError(
            f"PostgreSQL did not answer within the {self.deadline:g} s deadline; the "
            "connection was discarded"
        )

    def migrate(self) -> list[int]:
        """Apply pending migrations, each in its own transaction under an advisory lock."""
        q = self._queries

        def apply(conn: Conn) -> list[int]:
            applied: list[int] = []
            with conn.transaction():
                conn.execute(q["migration_lock"])
                conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
                conn.execute(q["migrations_table"])
            for migration in load_migrations("postgres"):
                with conn.transaction():
                    # The lock serializes concurrent migrators; the check under it makes a
                    # migration that another process just applied a no-op here.
                    conn.execute(q["migration_lock"])
                    # A migration sees no tenant's rows (migration 0010), even on a
                    # connection whose session carries the store's tenant: '' matches none.
                    # Not prepared: it would take a prepared name the store's own
                    # statements had before, and behind PgBouncer without
                    # prepare_threshold=none names that differ between connections make
                    # the errors less plain (docs/scaling.md).
                    conn.execute(SET_TENANT, {"tenant": ""}, prepare=False)
                    cur = conn.execute(q["applied_migrations"])
                    done = {row["version"] for row in cur.fetchall()}
                    if migration.version in done:
                        continue
                    conn.execute(migration.sql.encode())
                    conn.execute(
                        q["record_migration"],
                        {"version": migration.version, "name": migration.name},
                    )
                    applied.append(migration.version)
            with conn.transaction():
                conn.execute(q["migration_lock"])
                conn.execute(SET_TENANT, {"tenant": ""}, prepare=False)
                self.layout_report = lay_out(conn, self.schema, self.layout)
            # Found again at the next commit: tables distributed by hand (distribute=off)
            # are routed as well.
            self._distributed = None
            return applied

        try:
            # No deadline: a migration may rewrite a large table.
            return self._run(apply, writing=True, bounded=False)
        except (MigrationError, ConfigurationError):
            raise
        except Exception as exc:
            if isinstance(exc, UnavailableError):
                raise
            raise MigrationError(f"migration failed: {exc}") from exc

    def applied_migrations(self) -> list[int]:
        """The recorded migration versions; empty when the schema was never migrated."""

        def read(conn: Conn) -> list[int]:
            cur = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL AS present")
            row = cur.fetchone()
            if not row or not row["present"]:
                return []
            cur = conn.execute(self._queries["applied_migrations"])
            return [r["version"] for r in cur.fetchall()]

        return self._run(read, writing=False)

    def layout_state(self) -> dict[str, Any]:
        """How the store's tables are laid out (Citus nodes, shards, co-location, or hash
        partitions), for ``agentckpt doctor``."""

        def read(conn: Conn) -> dict[str, Any]:
            return describe(conn, self.schema)

        return self._run(read, writing=False)

    def _sql(self, conn: Conn, name: str) -> str:
        """The named query's text; its Citus variant on a distributed store."""
        if name in CITUS_VARIANTS:
            if self._distributed is None:
                self._distributed = is_distributed(conn)
            if self._distributed:
                return self._queries[CITUS_VARIANTS[name]]
        return self._queries[name]

    def read(self, name: str, params: Params) -> list[Row]:
        """Run a named read-only statement."""

        def read(conn: Conn) -> list[Row]:
            sql = self._sql(conn, name)
            prepare = True if name in _PREPARED_READS else None
            return self._scoped(conn, sql, params, binary=name in _BINARY_READS, prepare=prepare)

        return self._run(read, writing=False)

    def write(self, name: str, params: Params) -> list[Row]:
        """Run a named single-statement write in its own transaction."""

        def write(conn: Conn) -> list[Row]:
            return self._scoped(conn, self._sql(conn, name), params)

        return self._run(write, writing=True)

    def write_many(self, name: str, params: Sequence[Params]) -> None:
        """Run a named write per parameter set in one transaction (pipelined)."""
        self.write_all([(name, params)])

    def write_all(self, writes: Sequence[tuple[str, Sequence[Params]]]) -> None:
        """Run named writes, each per parameter set, in order, all in one transaction."""
        batches = [(self._queries[name], params) for name, params in writes]

        def write(conn: Conn) -> None:
            carried = self._carries_tenant(conn)
            with conn.transaction(), conn.cursor() as cur:
                if not carried:
                    cur.execute(SET_TENANT, {"tenant": self.tenant})
                for sql, params in batches:
                    if params:
                        cur.executemany(sql, params)

        self._run(write, writing=True)

    def commit_batch(self, writes: Sequence[StepWrite]) -> list[CommitOutcome]:
        """Commit steps of different runs in one statement and transaction: guards, blobs,
        history, prunes, seals, steps. A write whose guard fails writes nothing, and
        neither does a later step of its run in the batch (a run's next steps, each
        guarded by the one before: the overlapped run loop's chains)."""
        q = self._queries

        def commit(conn: Conn) -> list[CommitOutcome]:
            if self._distributed is None:
                self._distributed = is_distributed(conn)
            parts = layers(writes)
            if self._distributed:
                if self._router is None:
                    self._router = ShardRouter(q, SET_TENANT, {"tenant": self.tenant})
                if len(parts) == 1:
                    return self._router.commit(conn, writes)
                # A run's next steps, each in the transactions of its own part (a Citus
                # commit is routed a run at a time); none after one of its run refused.
                routed: dict[int, CommitOutcome] = {}
                refused: set[UUID] = set()
                for part in parts:
                    going = [w for w in part if w.run_id not in refused]
                    for write, outcome in zip(going, self._router.commit(conn, going), strict=True):
                        routed[id(write)] = outcome
                        if isinstance(outcome, Refused):
                            refused.add(write.run_id)
                landed = {
                    (w.run_id, w.step): (o.created_at, o.updated_at)
                    for w in writes
                    if isinstance(o := routed.get(id(w)), Committed)
                }
            elif len(writes) > 1 and len(parts) == len(writes) and chainable(writes):
                landed = self._commit_chain(conn, writes)  # one run's next steps
            elif len(parts) > 1:
                landed = self._commit_chains(conn, writes, parts)
            elif len(writes) == 1 and not writes[0].blobs and not writes[0].history:
                # The lone commit (commit_step's own rows: run_id, created_at, updated_at).
                lone = writes[0]
                plain = lone.prune_below is None and lone.seal_step is None
                step_rows = self._scoped_on(
                    conn,
                    commit_cursor(conn),
                    self._commit_step_plain if plain else self._commit_step,
                    lone.positional(),
                )
                landed = {(row[0], lone.step): (row[1], row[2]) for row in step_rows}
            else:
                rows = self._scoped(conn, q["commit_steps"], batch_params(writes))
                steps = {w.run_id: w.step for w in writes}
                landed = {
                    (row["run_id"], steps[row["run_id"]]): (row["created_at"], row["updated_at"])
                    for row in rows
                }
            outcomes: list[CommitOutcome] = []
            for write in writes:
                stamps = landed.get((write.run_id, write.step))
                if stamps is not None:
                    outcomes.append(Committed(*stamps))
                    continue
                probe = {"run_id": write.run_id, "step": write.step}
                found = self._scoped(conn, q["commit_probe"], probe)
                outcomes.append(Refused(found[0] if found else None))
            return outcomes

        return self._run(commit, writing=True)

    def _commit_chains(
        self, conn: Conn, writes: Sequence[StepWrite], parts: list[list[StepWrite]]
    ) -> dict[tuple[UUID, int], tuple[datetime, datetime]]:
        """Commit a batch holding some runs' next steps (each guarded by the one before)
        in one transaction; the landed writes' timestamps by run and step.

        Each such run's steps go as one ``commit_chain`` statement, the other runs'
        writes as one ``commit_steps``, all pipelined into one round trip. A step
        ``commit_chain`` cannot write (one with metadata, blobs or history) makes the
        batch go a part (:func:`layers`) at a time, each its own statement and round
        trip, none of a run after one of its steps was refused: a refused step leaves a
        head that the next one's guard might match by step and version alone.
        """
        by_run: dict[UUID, list[StepWrite]] = {}
        for write in writes:
            by_run.setdefault(write.run_id, []).append(write)
        chains = [run for run in by_run.values() if len(run) > 1]
        if not all(chainable(chain) for chain in chains):
            return self._commit_parts(conn, parts)
        singles = [run[0] for run in by_run.values() if len(run) == 1]
        q = self._queries
        cursors: list[Any] = []

        def send() -> None:
            if not self._carries_tenant(conn):
                conn.execute(SET_TENANT, {"tenant": self.tenant})
            for chain in chains:
                cursors.append(conn.cursor())
                cursors[-1].execute(q[chain_query(chain)], chain_params(chain))
            if singles:
                cursors.append(conn.cursor())
                cursors[-1].execute(q["commit_steps"], batch_params(singles))

        self._in_transaction(conn, send)
        landed: dict[tuple[UUID, int], tuple[datetime, datetime]] = {}
        for chain, cur in zip(chains, cursors, strict=False):
            landed.update(chain_landed(chain, cur.fetchall()))
        if singles:
            steps = {w.run_id: w.step for w in singles}
            for row in cursors[-1].fetchall():
                landed[(row["run_id"], steps[row["run_id"]])] = (
                    row["created_at"],
                    row["updated_at"],
                )
        return landed

    def _commit_chain(
        self, conn: Conn, writes: Sequence[StepWrite]
    ) -> dict[tuple[UUID, int], tuple[datetime, datetime]]:
        """Commit a :func:`chainable` run's next steps in one statement; the landed
        writes' timestamps by run and step."""
        rows = self._scoped(conn, self._queries[chain_query(writes)], chain_params(writes))
        return chain_landed(writes, rows)

    def _commit_parts(
        self, conn: Conn, parts: list[list[StepWrite]]
    ) -> dict[tuple[UUID, int], tuple[datetime, datetime]]:
        """Commit a batch's parts (:func:`layers`) in one transaction, a part at a time,
        skipping the steps of a run refused in an earlier part."""
        landed: dict[tuple[UUID, int], tuple[datetime, datetime]] = {}
        refused: set[UUID] = set()

        def send() -> None:
            if not self._carries_tenant(conn):
                conn.execute(SET_TENANT, {"tenant": self.tenant})
            for part in parts:
                going = [w for w in part if w.run_id not in refused]
                if not going:
                    continue
                cur = conn.execute(self._queries["commit_steps"], batch_params(going))
                steps = {w.run_id: w.step for w in going}
                for row in cur.fetchall():
                    landed[(row["run_id"], steps[row["run_id"]])] = (
                        row["created_at"],
                        row["updated_at"],
                    )
                refused.update(w.run_id for w in going if (w.run_id, w.step) not in landed)

        with conn.transaction():
            send()
        return landed

    def _in_transaction(self, conn: Conn, send: Callable[[], None]) -> None:
        """Run ``send`` (statements whose results are read afterwards) in one
        transaction: with pipelines, BEGIN, the statements and COMMIT in one round trip
        (the sync is sent when the pipeline block ends)."""
        if not self._pipeline:
            with conn.transaction():
                send()
            return
        try:
            with conn.pipeline(), conn.transaction():
                send()
        except BaseException:
            # As in _scoped_on: a connection lost mid-pipeline can look busy.
            if not conn.closed and (
                conn.broken or conn.info.transaction_status != TransactionStatus.IDLE
            ):
                conn.close()
            raise

    def close(self) -> None:
        """Close the pool."""
        self._pool.close()

    def pool_stats(self) -> dict[str, int]:
        """The pool's running totals (psycopg_pool's ``get_stats``: ``connections_lost``,
        ``returns_bad``, ``requests_wait_ms``, ...), read by the telemetry's pool metrics."""
        return self._pool.get_stats()
