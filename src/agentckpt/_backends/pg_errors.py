"""Translation of psycopg errors into agentckpt's exception tree, and what may be retried."""

from __future__ import annotations

import enum

import psycopg
from psycopg import errors as pg

from agentckpt.errors import (
    InvalidValueError,
    MigrationError,
    OutcomeUnknownError,
    RunNotFoundError,
    StorageFullError,
    StoreError,
    UnavailableError,
)


class Retry(enum.Enum):
    """What a failed attempt allows."""

    NO = "no"
    CONNECTION = "connection"  # the connection broke; the statement may or may not have run
    CONFLICT = "conflict"  # serialization failure or deadlock: rolled back, safe to rerun


# SQLSTATE classes that mean "this connection is gone or the server is going away".
_CONNECTION_CLASSES = ("08", "57")


def retry_kind(exc: psycopg.Error) -> Retry:
    """Classify an error for the retry loop."""
    state = exc.sqlstate
    if state in ("40001", "40P01"):
        return Retry.CONFLICT
    if state is None and isinstance(exc, psycopg.OperationalError):
        return Retry.CONNECTION
    if state is not None and state[:2] in _CONNECTION_CLASSES and state != "57014":
        return Retry.CONNECTION
    return Retry.NO


def translate(exc: psycopg.Error, *, writing: bool) -> Exception:
    """The agentckpt error for a psycopg error that will not be retried (again)."""
    state = exc.sqlstate or ""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if retry_kind(exc) is Retry.CONNECTION:
        if writing:
            return OutcomeUnknownError(
                f"PostgreSQL connection lost during a write ({text}); the write may or may not "
                "be durable: retry the same commit, it is idempotent"
            )
        return UnavailableError(f"PostgreSQL unavailable: {text}")
    if state.startswith("53"):
        return StorageFullError(f"PostgreSQL out of resources ({state}): {text}")
    if isinstance(exc, pg.UndefinedTable | pg.InvalidSchemaName):
        return MigrationError(
            f"PostgreSQL: {text}; run `agentckpt migrate` or Store.migrate() first"
        )
    if isinstance(exc, pg.ForeignKeyViolation):
        # Every foreign key of the schema references runs (run_id).
        return RunNotFoundError(f"PostgreSQL: {text}: the run does not exist")
    if isinstance(exc, pg.ProgramLimitExceeded | pg.UntranslatableCharacter):
        return InvalidValueError("", f"PostgreSQL refused the value ({state}): {text}")
    if isinstance(exc, pg.QueryCanceled | pg.LockNotAvailable):
        return UnavailableError(f"PostgreSQL gave up waiting ({state}): {text}")
    return StoreError(f"PostgreSQL error {state or '(no SQLSTATE)'}: {text}")


# The server answered, but not yet: worth trying again within the first connect's bound.
_NOT_YET = (
    "the database system is starting up",
    "the database system is shutting down",
    "the database system is in recovery mode",
    "the database system is not yet accepting connections",
    "too many clients",
    "remaining connection slots are reserved",
)
# libpq refused the URL's own values before any network I/O.
_BAD_URL = ("invalid ", "Servname not supported", 'missing "="', "unrecognized ")


def connect_reason(exc: psycopg.Error) -> str:
    """libpq's reason, the server's own words when it answered (``FATAL: ...``)."""
    text = " ".join(str(exc).split())
    for prefix in ("connection failed: ", "connection is bad: "):
        text = text.removeprefix(prefix)
    return text or type(exc).__name__


def connect_failure_is_final(exc: psycopg.Error) -> bool:
    """Whether a failed first connection can only fail again: a bad URL value, or a server
    that refused this role, password or database (not one that is starting up)."""
    if isinstance(exc, psycopg.ProgrammingError):
        return True
    text = str(exc)
    if "FATAL:" in text:
        return not any(phrase in text for phrase in _NOT_YET)
    return any(marker in text for marker in _BAD_URL)
