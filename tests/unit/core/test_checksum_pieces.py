"""Checksums hash in pieces below hashlib's GIL threshold: the same digests, and no call
that would let the GIL go (on the event loop's thread the SQLite worker would take it)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from agentckpt._core import checksums
from agentckpt._core.checksums import Members, checksum_v1

# hashlib's HASHLIB_GIL_MINSIZE: from this many bytes in one call it releases the GIL.
GIL_MINSIZE = 2048


class Recording:
    """A sha256 object that records the size of every call that feeds it."""

    fed: list[int] = []

    def __init__(self, data: Any = b"") -> None:
        self.inner = hashlib.sha256()
        if len(data):
            self.update(data)

    def update(self, data: Any) -> None:
        Recording.fed.append(len(data))
        self.inner.update(data)

    def copy(self) -> Recording:
        twin = Recording()
        twin.inner = self.inner.copy()
        return twin

    def digest(self) -> bytes:
        return self.inner.digest()


def test_large_members_are_hashed_in_pieces_with_the_same_digests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = {"log": [f"line {i} " * 20 for i in range(200)], "note": "x" * 9000, "n": 1}
    expected = Members.of(state)
    Recording.fed = []
    monkeypatch.setattr(checksums, "_sha256", Recording)
    members = Members.of(state)
    grown = members.replaced(
        {0: (expected.values[0][:-1] + b',"' + b"y" * 5000 + b'"]', members.prefixes[0])}
    )
    whole = checksum_v1(b"z" * 10000)
    assert Recording.fed
    assert max(Recording.fed) < GIL_MINSIZE
    assert members.checksum == expected.checksum
    assert members.parts == expected.parts
    monkeypatch.undo()
    assert grown.checksum == expected.replaced({0: (grown.values[0], None)}).checksum
    assert whole == hashlib.sha256(b"z" * 10000).digest()
