"""HTML building blocks; every piece of stored data passes through :func:`esc`.

Pages are built as strings from these helpers and poured into the one layout template
(``templates/page.html``). Nothing here is a template language: a value is either
escaped text or HTML made by a helper, never user data pasted in as markup.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from functools import cache
from importlib.resources import files
from string import Template
from typing import Any
from urllib.parse import quote, urlencode

from agentckpt._core.blobs import BlobRef, is_ref
from agentckpt._version import __version__
from agentckpt.ops.units import human_age, human_bytes

_CLASS = re.compile(r"[^a-z0-9_-]")


def esc(value: Any) -> str:
    """Text made safe for HTML content and quoted attribute values."""
    return html.escape(str(value), quote=True)


def css_class(value: Any) -> str:
    """A CSS class name derived from data (a role, a status): letters, digits, - and _."""
    return _CLASS.sub("-", str(value).lower())[:40] or "none"


def link(href: str, text: str, *, title: str | None = None, cls: str | None = None) -> str:
    """An anchor to a path on this server; ``text`` is escaped."""
    extra = f' title="{esc(title)}"' if title else ""
    extra += f' class="{esc(cls)}"' if cls else ""
    return f'<a href="{esc(href)}"{extra}>{esc(text)}</a>'


def path(*parts: Any, query: dict[str, Any] | None = None) -> str:
    """A server path from segments, each percent-quoted; with an optional query string."""
    text = "/" + "/".join(quote(str(p), safe="") for p in parts)
    if query:
        text += "?" + urlencode({k: v for k, v in query.items() if v is not None})
    return text


def pretty_json(value: Any) -> str:
    """A JSON value, indented and escaped, in a ``<pre>``."""
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return f'<pre class="json">{esc(text)}</pre>'


def json_html(value: Any, *, inline_chars: int = 90) -> str:
    """A JSON value: on one line when it is short, else as :func:`pretty_json`."""
    compact = json.dumps(value, ensure_ascii=False, default=str)
    if len(compact) <= inline_chars:
        return f'<code class="json-inline">{esc(compact)}</code>'
    return pretty_json(value)


def scalar(value: Any) -> bool:
    """True for a JSON value that is not an object or an array."""
    return value is None or isinstance(value, str | int | float | bool)


def table(
    headers: Sequence[str], rows: Iterable[Sequence[str]], *, numeric: Sequence[int] = ()
) -> str:
    """A table from already-built cell HTML; columns in ``numeric`` align right."""
    head = "".join(
        f'<th class="num">{esc(h)}</th>' if i in numeric else f"<th>{esc(h)}</th>"
        for i, h in enumerate(headers)
    )
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{cell}</td>' if i in numeric else f"<td>{cell}</td>"
            for i, cell in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    if not body:
        body = f'<tr><td colspan="{len(headers)}" class="empty">nothing here yet</td></tr>'
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def badge(text: str) -> str:
    """A status badge, colored by status."""
    return f'<span class="badge status-{css_class(text)}">{esc(text)}</span>'


def size(count: int | None) -> str:
    """Bytes for people, exact count on hover."""
    if count is None:
        return "-"
    return f'<span title="{count} bytes">{esc(human_bytes(count))}</span>'


def when(moment: datetime | None) -> str:
    """A time as an age, the exact time on hover."""
    if moment is None:
        return "-"
    return (
        f'<time datetime="{esc(moment.isoformat())}" title="{esc(moment.isoformat())}">'
        f"{esc(human_age(moment))}</time>"
    )


def blob_link(run_id: Any, ref: BlobRef) -> str:
    """A download link for a blob a state refers to."""
    href = path("runs", run_id, "blobs", ref.digest)
    return (
        f'<a class="blob" href="{esc(href)}">blob sha256:{esc(ref.digest[:12])}… '
        f"({esc(human_bytes(ref.size))})</a>"
    )


def value_html(run_id: Any, value: Any) -> str:
    """Message content: text as text, blob references as links, the rest as JSON."""
    if isinstance(value, str):
        return f'<pre class="text">{esc(value)}</pre>'
    if is_ref(value):
        return blob_link(run_id, BlobRef.from_json(value))
    if isinstance(value, list) and all(
        isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        for p in value
    ):
        return "".join(f'<pre class="text">{esc(p["text"])}</pre>' for p in value)
    return json_html(value)


@cache
def _layout() -> Template:
    text = files("agentckpt.inspector").joinpath("templates", "page.html").read_text("utf-8")
    return Template(text)


def page(title: str, body: str, *, store: str, crumbs: Sequence[tuple[str, str]] = ()) -> str:
    """A whole page: the layout with ``body`` (HTML) in it; ``title`` is escaped."""
    trail = [link("/", "runs")] + [link(href, text) for href, text in crumbs]
    return _layout().substitute(
        title=esc(title),
        store=esc(store),
        crumbs=" / ".join(trail),
        body=body,
        version=esc(__version__),
    )
