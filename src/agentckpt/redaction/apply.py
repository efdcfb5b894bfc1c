"""Apply redactors to a JSON value: every string in it, wherever it is nested."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agentckpt._core.blobs import is_ref
from agentckpt.errors import RedactionError
from agentckpt.redaction.records import Redaction

__all__ = ["Redactor", "redact", "redact_text"]

# A redactor takes text and returns it with what it removes replaced (by convention
# with ``placeholder(kind)``). Its kind, for the records, is its ``kind`` attribute, or
# its ``__name__`` for a plain function.
Redactor = Callable[[str], str]


def _kind(redactor: Redactor) -> str:
    kind = getattr(redactor, "kind", None) or getattr(redactor, "__name__", None)
    return str(kind or type(redactor).__name__)


def redact_text(
    text: str, redactors: Sequence[Redactor], *, path: str = ""
) -> tuple[str, list[Redaction]]:
    """``text`` through every redactor in order, and a record per redactor that changed it.

    A redactor that raises, or returns something other than a str, is a
    :class:`RedactionError` naming it and ``path`` (never the text).
    """
    found: list[Redaction] = []
    for redactor in redactors:
        try:
            result = redactor(text)
        except Exception as exc:
            raise RedactionError(
                f"redactor {_kind(redactor)!r} failed at {path or '/'}: {type(exc).__name__}"
            ) from None
        if not isinstance(result, str):
            raise RedactionError(
                f"redactor {_kind(redactor)!r} returned {type(result).__name__} at "
                f"{path or '/'}, not str"
            )
        if result != text:
            found.append(Redaction(path or "/", _kind(redactor)))
            text = result
    return text, found


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


_REF_KEYS = ("$blob", "uri", "size", "codec")


def redact(
    value: Any, redactors: Sequence[Redactor], *, path: str = ""
) -> tuple[Any, list[Redaction]]:
    """``value`` with every string redacted (object keys are kept), and the records.
    A blob reference (:meth:`~agentckpt._core.blobs.BlobRef.to_json`) is left as it is.

    Paths are JSON Pointers from ``path``. Containers are copied only where something
    changed; an unchanged value is returned as it is.
    """
    if not redactors:
        return value, []
    found: list[Redaction] = []

    def walk(item: Any, at: str) -> Any:
        if isinstance(item, str):
            text, records = redact_text(item, redactors, path=at)
            found.extend(records)
            return text
        if isinstance(item, dict):
            if len(item) == len(_REF_KEYS) and is_ref(item):
                # A blob reference is the library's own (a digest, a size, a codec, a
                # URI): its value was redacted before it was stored, and a hex digest
                # can look like a card number, which would make the blob unreachable.
                return item
            out = {k: walk(v, f"{at}/{_escape(str(k))}") for k, v in item.items()}
            return item if all(out[k] is item[k] for k in item) else out
        if isinstance(item, list | tuple):
            items = [walk(v, f"{at}/{i}") for i, v in enumerate(item)]
            same = all(a is b for a, b in zip(items, item, strict=True))
            return item if same else type(item)(items) if isinstance(item, tuple) else items
        return item

    return walk(value, path), found
