"""Blobs a state refers to: what they hold (JSON, text, or bytes of a known type), shown
inline up to a size, and always downloadable.

A blob is sent as an attachment with the content type found here (never rendered as a
page of this origin); the page shows JSON and text inline, cut at :data:`SHOWN_CHARS`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from agentckpt._core.blobs import BlobRef
from agentckpt.errors import AgentckptError
from agentckpt.inspector.render import path
from agentckpt.store.store import Store

# Blobs up to this size are read to be shown inline; larger ones are a download link.
INLINE_BYTES = 256 * 1024
# Characters of a blob shown on a page.
SHOWN_CHARS = 20_000
# Blobs read per page, so a page of many large results stays quick.
PER_PAGE = 40

_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png", "png"),
    (b"\xff\xd8\xff", "image/jpeg", "jpg"),
    (b"GIF87a", "image/gif", "gif"),
    (b"GIF89a", "image/gif", "gif"),
    (b"%PDF-", "application/pdf", "pdf"),
    (b"PK\x03\x04", "application/zip", "zip"),
    (b"\x1f\x8b", "application/gzip", "gz"),
    (b"\x28\xb5\x2f\xfd", "application/zstd", "zst"),
)


@dataclass(frozen=True, slots=True)
class Content:
    """What a blob's bytes are: a content type, a file extension, and the decoded text
    or JSON value when it is one of those."""

    content_type: str
    extension: str
    text: str | None = None
    value: Any = None
    is_json: bool = False


def sniff(data: bytes) -> Content:
    """JSON, UTF-8 text, a few well-known binary formats, else octet-stream."""
    for magic, content_type, extension in _MAGIC:
        if data.startswith(magic):
            return Content(content_type, extension)
    if data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        return Content("image/webp", "webp")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return Content("application/octet-stream", "bin")
    try:
        value = json.loads(text)
    except ValueError:
        if "\x00" in text:
            return Content("application/octet-stream", "bin")
        return Content("text/plain; charset=utf-8", "txt", text=text)
    return Content("application/json", "json", text=text, value=value, is_json=True)


@dataclass(frozen=True, slots=True)
class BlobView:
    """A blob as a page shows it: its reference, download link, and content if read."""

    ref: BlobRef
    href: str
    content: Content | None
    note: str | None = None

    @property
    def shown(self) -> str | None:
        """The text shown inline (JSON pretty-printed), cut at SHOWN_CHARS."""
        if self.content is None or self.content.text is None:
            return None
        text = self.content.text
        if self.content.is_json:
            text = json.dumps(self.content.value, indent=2, ensure_ascii=False)
        return text[:SHOWN_CHARS]

    @property
    def truncated(self) -> bool:
        """True when the inline text is cut."""
        if self.content is None or self.content.text is None:
            return False
        return len(self.content.text) > SHOWN_CHARS or (
            self.content.is_json and len(self.shown or "") >= SHOWN_CHARS
        )


class Blobs:
    """Reads the blobs one page shows, within the page's budget."""

    def __init__(self, store: Store, run_id: UUID) -> None:
        self.store = store
        self.run_id = run_id
        self._read = 0
        self._seen: dict[str, BlobView] = {}

    def data(self, ref: BlobRef) -> bytes | None:
        """The blob's bytes if it is small enough and the page's budget allows."""
        if ref.size > INLINE_BYTES or self._read >= PER_PAGE:
            return None
        self._read += 1
        try:
            return self.store.get_blob(self.run_id, ref)
        except AgentckptError:
            return None

    def view(self, value: Any) -> BlobView:
        """How to show the blob ``value`` (a reference as found in a state) refers to."""
        ref = value if isinstance(value, BlobRef) else BlobRef.from_json(value)
        if ref.digest in self._seen:
            return self._seen[ref.digest]
        href = path("runs", self.run_id, "blobs", ref.digest)
        if ref.size > INLINE_BYTES:
            view = BlobView(ref, href, None, "too large to show here")
        else:
            data = self.data(ref)
            if data is None:
                view = BlobView(ref, href, None, "not read on this page")
            else:
                view = BlobView(ref, href, sniff(data))
        self._seen[ref.digest] = view
        return view
