"""The exceptions agentckpt raises; no driver exception (psycopg, sqlite3) escapes the API.

Every error says what was wrong and where. The tree::

    AgentckptError
    ├── InvalidValueError (also ValueError)    a value cannot be stored exactly; names its JSON path
    ├── InvalidPatchError (also ValueError)    a delta does not apply to the document it targets
    ├── StateVersionError                      a state is newer than the code or has no upgrade
    ├── NotFoundError (also LookupError)
    │   ├── RunNotFoundError
    │   └── StepNotFoundError
    ├── ConflictError                          nothing was written; re-read and decide
    │   ├── StepConflictError                  the step exists with other content
    │   ├── StaleHeadError                     the run moved on since the writer last read it
    │   └── FencedError                        the writer's lease epoch is stale
    ├── CorruptDataError                       stored bytes fail their checksum or cannot be decoded
    ├── ConfigurationError                     a bad URL, option or setting
    └── StoreError                             the database could not do what was asked
        ├── UnavailableError                   no connection could be had; nothing was written
        ├── OutcomeUnknownError                the commit may or may not have happened; retry it
        ├── StorageFullError                   the disk or a quota is full; nothing was written
        └── MigrationError                     the schema is missing, newer, or a migration failed

Only ``OutcomeUnknownError`` leaves the caller unsure whether a write happened. Commits are
idempotent, so the answer is always the same: retry the same step with the same content.
"""

from __future__ import annotations

__all__ = [
    "AgentckptError",
    "ConfigurationError",
    "ConflictError",
    "CorruptDataError",
    "FencedError",
    "InvalidPatchError",
    "InvalidValueError",
    "MigrationError",
    "NotFoundError",
    "OutcomeUnknownError",
    "RunNotFoundError",
    "StaleHeadError",
    "StateVersionError",
    "StepConflictError",
    "StepNotFoundError",
    "StorageFullError",
    "StoreError",
    "UnavailableError",
]


class AgentckptError(Exception):
    """Base class of every error agentckpt raises."""


class InvalidValueError(AgentckptError, ValueError):
    """A value cannot be stored exactly; raised before anything is sent to a database.

    ``path`` is the JSON Pointer (RFC 6901) of the offending value inside the document,
    ``""`` for the document itself.
    """

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        where = path if path else "(root)"
        super().__init__(f"cannot store value at {where}: {reason}")


class InvalidPatchError(AgentckptError, ValueError):
    """A delta (JSON Patch) does not apply to the document it is applied to."""


class StateVersionError(AgentckptError):
    """A stored state has a version this code cannot read or upgrade."""


class NotFoundError(AgentckptError, LookupError):
    """Something asked for does not exist."""


class RunNotFoundError(NotFoundError):
    """No run has this id."""


class StepNotFoundError(NotFoundError):
    """The run has no kept step with this number (it never existed or was pruned)."""


class ConflictError(AgentckptError):
    """A write was refused because it disagrees with what is stored; nothing was written."""


class StepConflictError(ConflictError):
    """The step is already committed with different content; committed steps are immutable."""


class StaleHeadError(ConflictError):
    """The writer expected another latest step; another writer has moved the run on."""


class FencedError(ConflictError):
    """The writer's lease epoch is stale: another worker owns the run now."""


class CorruptDataError(AgentckptError):
    """Stored bytes fail their checksum or cannot be decoded; names the run and step."""


class ConfigurationError(AgentckptError):
    """An unusable URL, option or setting."""


class StoreError(AgentckptError):
    """The database failed to do what was asked."""


class UnavailableError(StoreError):
    """No working connection could be had in time; nothing was written."""


class OutcomeUnknownError(StoreError):
    """The connection broke while a commit was in flight: it may or may not be durable.

    Retry the same commit: the same step with the same content is an idempotent no-op.
    """


class StorageFullError(StoreError):
    """The database's disk or a quota is full; nothing was written."""


class MigrationError(StoreError):
    """The database schema is missing, newer than this code, or a migration failed."""
