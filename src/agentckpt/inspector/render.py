"""The pages' template engine: Jinja2 with autoescaping on, templates in ``templates/``.

Every value a template prints is escaped; the one exception is the SVG charts, built
here from numbers with their few labels escaped, which the run page marks ``|safe``.
Undefined names are errors, so a typo in a template fails its test instead of printing
nothing. Jinja2 is the ``inspector`` extra: it is imported when the first page renders,
and :func:`require` names the extra when it is missing.
"""

from __future__ import annotations

import importlib.util
import json
import re
from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from agentckpt._core.blobs import is_ref
from agentckpt._version import __version__
from agentckpt.errors import ConfigurationError
from agentckpt.ops.serde import Undecoded
from agentckpt.ops.units import human_age, human_bytes

if TYPE_CHECKING:
    from jinja2 import Environment

_CLASS = re.compile(r"[^a-z0-9_-]")
# A JSON value up to this many characters is shown on one line.
INLINE_JSON = 90


def css_class(value: Any) -> str:
    """A CSS class name derived from data (a role, a status): letters, digits, - and _."""
    return _CLASS.sub("-", str(value).lower())[:40] or "none"


def path(*parts: Any, query: dict[str, Any] | None = None) -> str:
    """A server path from segments, each percent-quoted; with an optional query string
    (None values left out)."""
    text = "/" + "/".join(quote(str(p), safe="") for p in parts)
    if query:
        items = {k: v for k, v in query.items() if v is not None and v != ""}
        if items:
            text += "?" + urlencode(items)
    return text


def to_json(value: Any, indent: int | None = 2) -> str:
    """JSON text of a value, exactly as stored (big integers, key order)."""
    return json.dumps(value, indent=indent, ensure_ascii=False, default=str)


def is_short(value: Any) -> bool:
    """True for a value shown on one line."""
    return len(to_json(value, None)) <= INLINE_JSON


def kind_of_value(value: Any) -> str:
    """How a template shows a value: text, blob, undecoded, short JSON or JSON."""
    if isinstance(value, str):
        return "text"
    if isinstance(value, Undecoded):
        return "undecoded"
    if is_ref(value):
        return "blob"
    return "short" if is_short(value) else "json"


def when_iso(moment: datetime | None) -> str:
    """An exact time, ISO 8601."""
    return moment.isoformat() if moment else ""


def age(moment: datetime | None) -> str:
    """How long ago, for people."""
    return human_age(moment)


def number(value: int | float | None) -> str:
    """A count with thousands separators."""
    if value is None:
        return "-"
    return f"{value:,}"


def money(value: float | None) -> str:
    """A cost in US dollars."""
    if value is None:
        return "-"
    return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"


def require() -> None:
    """Raise :class:`ConfigurationError` naming the extra when Jinja2 is missing."""
    if importlib.util.find_spec("jinja2") is None:
        raise ConfigurationError(
            "the inspector needs Jinja2, which the base install does not include: "
            "pip install 'agentckpt[inspector]'"
        )


@cache
def environment() -> Environment:
    """The one template environment (templates are read once per process)."""
    require()
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(
        loader=PackageLoader("agentckpt.inspector", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        bytes=human_bytes,
        css=css_class,
        json=to_json,
        iso=when_iso,
        age=age,
        number=number,
        money=money,
    )
    env.globals.update(path=path, value_kind=kind_of_value, version=__version__, to_json=to_json)
    return env


def render(template: str, **context: Any) -> str:
    """A whole page from ``templates/<template>``."""
    return environment().get_template(template).render(**context)
