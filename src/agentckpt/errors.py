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
    │   │   └── AcknowledgedStepsLostError     the head is below a step this store acknowledged
    │   ├── LeaseHeldError                     another worker holds a live lease on the run
    │   └── FencedError                        the writer's lease epoch is stale
    │       └── LeaseLostError                 this worker's lease was taken over
    ├── CorruptDataError                       stored bytes fail their checksum or cannot be decoded
    ├── KeyUnavailableError                    encryption: a key is missing, wrong or revoked
    │   └── ExportFormatError                  an export file this version cannot import
    ├── ConfigurationError                     a bad URL, option or setting
    │   ├── TenantError                        a tenant name that is not valid
    │   └── PruneStrategyError (also ValueError)  LangGraph: an unknown prune strategy
    ├── StoreError                             the database could not do what was asked
    │   ├── UnavailableError                   no connection could be had; nothing was written
    │   ├── OutcomeUnknownError                the commit may or may not have happened; retry it
    │   ├── StorageFullError                   the disk or a quota is full; nothing was written
    │   └── MigrationError                     the schema is missing, newer, or a migration failed
    ├── RedactionError                         a redactor failed or returned something unusable
    ├── ConfigDriftError                       conversations: the runtime's config or tools changed
    ├── TurnError                              conversations: the call does not fit the open turn
    ├── ResultNotLoadedError                   conversations: a blob result read before loading
    ├── DeltaChannelPruneError                 LangGraph: a DeltaChannel thread cannot be pruned
    ├── StepAbandonedError                     runs, overlapped: the step before was not committed
    ├── TransientError                         runs, from a step: retry it from the last checkpoint
    └── FatalError                             runs, from a step: stop and mark the run failed
        ├── RetriesExhaustedError              a step kept failing transiently; the run is failed
        └── RunFailedError                     the run was already marked failed

Only ``OutcomeUnknownError`` leaves the caller unsure whether a write happened. Commits are
idempotent, so the answer is always the same: retry the same step with the same content.
``AcknowledgedStepsLostError`` is a ``StaleHeadError`` (nothing was written, re-read the run
and go on from what the database holds), raised when that head is *older* than a step
this store had itself acknowledged: the database lost acknowledged commits (an
asynchronous failover, a restore from backup). It is logged at ERROR and counted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from uuid import UUID

    from agentckpt.conversation.recovery import Difference

__all__ = [
    "AcknowledgedStepsLostError",
    "AgentckptError",
    "ConfigDriftError",
    "ConfigurationError",
    "ConflictError",
    "CorruptDataError",
    "DeltaChannelPruneError",
    "ExportFormatError",
    "FatalError",
    "FencedError",
    "InvalidPatchError",
    "InvalidValueError",
    "KeyUnavailableError",
    "LeaseHeldError",
    "LeaseLostError",
    "MigrationError",
    "NotFoundError",
    "OutcomeUnknownError",
    "PruneStrategyError",
    "RedactionError",
    "ResultNotLoadedError",
    "RetriesExhaustedError",
    "RunFailedError",
    "RunNotFoundError",
    "StaleHeadError",
    "StateVersionError",
    "StepAbandonedError",
    "StepConflictError",
    "StepNotFoundError",
    "StorageFullError",
    "StoreError",
    "TenantError",
    "TransientError",
    "TurnError",
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


class AcknowledgedStepsLostError(StaleHeadError):
    """The run's head is below a step this store acknowledged: acknowledged commits are gone.

    The database was rolled back (restored from a backup) or failed over to a replica that
    had not received them (asynchronous replication, ``synchronous_commit`` below ``on``).
    Nothing was written. It is a :class:`StaleHeadError`, so code that re-reads the run
    on a stale head goes on from what the database holds; the store raises it once per
    run and then accepts the database's head. ``run_id``, ``acknowledged_step`` (the
    highest step this store acknowledged) and ``head_step`` (the head found, None for
    no step) say what was lost; ``agentckpt doctor`` says which setting allowed it.
    """

    def __init__(
        self, message: str, *, run_id: UUID, acknowledged_step: int, head_step: int | None
    ) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.acknowledged_step = acknowledged_step
        self.head_step = head_step


class FencedError(ConflictError):
    """The writer's lease epoch is stale: another worker owns the run now."""


class CorruptDataError(AgentckptError):
    """Stored bytes fail their checksum or cannot be decoded; names the run and step."""


class KeyUnavailableError(AgentckptError):
    """An encryption key is missing, wrong or revoked: names the key id, and the run when
    a run's value was being read. Nothing was written or returned half-decrypted."""

    def __init__(self, message: str, *, key_id: str, run_id: UUID | None = None) -> None:
        super().__init__(message)
        self.key_id = key_id
        self.run_id = run_id


class ConfigurationError(AgentckptError):
    """An unusable URL, option or setting."""


class TenantError(ConfigurationError):
    """A tenant name that is not valid (``Store.connect(url, tenant=...)``)."""


class RedactionError(AgentckptError):
    """A redactor raised or returned something other than text; nothing was stored.

    The message names the redactor and the path of the value, never the value.
    """


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


# -- conversations ---------------------------------------------------------------------


class ConfigDriftError(AgentckptError):
    """The runtime offers another agent config or tool set than the checkpoint recorded.

    ``differences`` lists every difference (never only the first), so one error tells
    the operator all that must change, or that ``accept_drift=True`` must be passed.
    """

    def __init__(self, conversation_id: UUID, differences: list[Difference]) -> None:
        self.conversation_id = conversation_id
        self.differences = list(differences)
        lines = "\n".join(f"  - {d}" for d in self.differences)
        super().__init__(
            f"conversation {conversation_id}: the runtime differs from the checkpoint in "
            f"{len(self.differences)} place(s); fix the runtime or pass accept_drift=True:\n"
            f"{lines}"
        )


class TurnError(AgentckptError):
    """A call that does not fit the state of the turn (no open turn, one already open,
    a handle superseded by a newer one for the same conversation)."""


class ResultNotLoadedError(AgentckptError):
    """A tool result stored as a blob was read before it was loaded.

    The sync API loads such results on first access; the async API cannot block in an
    attribute access, so load them first with ``await conversation.load_result(call)``.
    """


# -- runs --------------------------------------------------------------------------------


class StepAbandonedError(AgentckptError):
    """Overlapped run loop: the commit of the step before this one failed, so this step,
    computed meanwhile, is thrown away; raised by ``ctx.effect`` instead of running the
    action. The loop handles the earlier step's failure and computes this step again."""


class TransientError(AgentckptError):
    """A step failed in a way that may pass: the loop reloads the last checkpoint and retries.

    Retries are bounded by the run's :class:`~agentckpt.runs.RetryPolicy`, with backoff.
    """


class FatalError(AgentckptError):
    """A step failed for good: the loop marks the run failed, records the error, re-raises."""


class RetriesExhaustedError(FatalError):
    """A step raised :class:`TransientError` on every allowed attempt; the run is failed.

    ``__cause__`` is the last :class:`TransientError`.
    """


class RunFailedError(FatalError):
    """The run is marked failed; set its status back to ``active`` to resume it."""


class LeaseHeldError(ConflictError):
    """Another worker holds a live lease on the run; nothing was written.

    ``owner`` is the holder, ``expires_at`` when its lease runs out unless renewed.
    """

    def __init__(self, message: str, *, owner: str | None = None, expires_at: object = None):
        super().__init__(message)
        self.owner = owner
        self.expires_at = expires_at


class LeaseLostError(FencedError):
    """This worker's lease was taken over (its epoch is stale); it writes nothing more."""


class ExportFormatError(CorruptDataError):
    """An export file is not one this version can import; the message names the line.

    ``line`` (1-based) is the file line and ``field`` the field of that line found wrong,
    each None where the problem is not at one line (a truncated file) or one field.
    """

    def __init__(self, message: str, *, line: int | None = None, field: str | None = None) -> None:
        self.line = line
        self.field = field
        super().__init__(message)


# -- LangGraph ---------------------------------------------------------------------------


class PruneStrategyError(ConfigurationError, ValueError):
    """An unknown ``prune`` strategy of the LangGraph checkpointer."""


class DeltaChannelPruneError(AgentckptError, NotImplementedError):
    """``prune(strategy="keep_latest")`` refused: a thread uses a LangGraph DeltaChannel."""
