"""agentckpt with encryption at rest on (``agentckpt bench --encryption``).

The same subject as :mod:`agentckpt.bench.subjects.agentckpt`, its store opened with
``encryption=`` (AES-256-GCM, a KEK held in memory as :class:`StaticKeys` holds it): the
difference between the two columns is the cost of sealing every payload after
compression and opening it before decompression.
"""

from __future__ import annotations

from typing import Any

from agentckpt.bench.longrun import LongRunSpec
from agentckpt.bench.subjects.agentckpt import (
    Agentckpt,
    AgentckptConversations,
    AgentckptRun,
    store_url,
)
from agentckpt.bench.subjects.base import Place
from agentckpt.conversation import state_migrations
from agentckpt.crypto import Encryption, StaticKeys, new_key
from agentckpt.store.store_async import AsyncStore

__all__ = ["AgentckptEncrypted"]

NAME = "agentckpt_enc"


def _encryption() -> Encryption:
    # A fresh KEK per store: the benchmark measures the cipher, not key management.
    return Encryption(keys=StaticKeys({"bench-kek": new_key()}))


class AgentckptEncryptedRun(AgentckptRun):
    """The long run; a resume reads through a new store object with the same keys."""

    async def resume(self, spec: LongRunSpec) -> dict[str, Any]:
        """``latest`` on a new store object (no head cache) sharing the connections and
        the keyring, as a restarted worker with the same key provider reads."""
        fresh = AsyncStore(self.store.backend, policy=self.store.policy, sealing=self.store.sealing)
        return await self._latest(fresh, spec)


class AgentckptEncrypted(Agentckpt):
    """The subject under test, encrypted at rest."""

    name = NAME

    def label(self, dialect: str) -> str:
        """Column header."""
        return "agentckpt enc"

    async def conversations(self, place: Place) -> AgentckptConversations:
        """As :meth:`Agentckpt.conversations`, with encryption on."""
        store = await AsyncStore.connect(
            store_url(place), migrations=state_migrations(), encryption=_encryption()
        )
        return AgentckptConversations(store)

    async def long_run(self, place: Place) -> AgentckptRun:
        """As :meth:`Agentckpt.long_run`, with encryption on."""
        store = await AsyncStore.connect(store_url(place), encryption=_encryption())
        return AgentckptEncryptedRun(store)
