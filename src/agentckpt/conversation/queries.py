"""The conversation API's named queries: ``sql/<dialect>/conversations.sql``.

Code refers to a query only through these constants; a test checks that each one
exists in every dialect.
"""

from __future__ import annotations

from typing import Final

HEARTBEAT: Final = "conversation_heartbeat"
ORPHANS: Final = "conversation_orphans"
HISTORY: Final = "conversation_history"
HISTORY_SEQS: Final = "conversation_history_seqs"
TO_UPGRADE: Final = "conversations_to_upgrade"
CLAIM_ORPHANS: Final = "conversations_claim_orphans"
