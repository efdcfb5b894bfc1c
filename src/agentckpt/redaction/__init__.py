"""Redaction before storage: secrets and personal data replaced by typed placeholders.

Pass ``redactors=[...]`` to :class:`~agentckpt.Conversations`, :class:`~agentckpt.AgentRun`
or a framework adapter; every string of message content, tool arguments and tool results
is passed through them before anything is stored, each match replaced by
``[REDACTED:<kind>]``. What was redacted is recorded per step, as paths and kinds, never
values (:func:`records_in`), and shown by ``agentckpt runs show`` and the inspector.

    >>> from agentckpt.redaction import DEFAULT_REDACTORS, redact
    >>> redact({"content": "mail me at ada@example.com"}, DEFAULT_REDACTORS)
    ({'content': 'mail me at [REDACTED:email]'}, [Redaction(path='/content', kind='email')])
"""

from __future__ import annotations

from agentckpt.redaction.apply import Redactor, redact, redact_text
from agentckpt.redaction.builtin import (
    DEFAULT_REDACTORS,
    PII_REDACTORS,
    SECRET_REDACTORS,
    PatternRedactor,
    luhn_valid,
    placeholder,
)
from agentckpt.redaction.records import RECORD_PREFIX, Redaction, record_metadata, records_in

__all__ = [
    "DEFAULT_REDACTORS",
    "PII_REDACTORS",
    "RECORD_PREFIX",
    "SECRET_REDACTORS",
    "PatternRedactor",
    "Redaction",
    "Redactor",
    "luhn_valid",
    "placeholder",
    "record_metadata",
    "records_in",
    "redact",
    "redact_text",
]
