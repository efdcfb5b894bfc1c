"""Bad inputs through the LangGraph saver (reliability rows 16-22), on both backends.

Channel values and metadata go through LangGraph's own serializer, which keeps NaN,
infinities and U+0000 in values (lossless, as row 18 allows); a lone surrogate in a
value comes back as ``?`` (recorded below as a gap).
What it cannot encode (a lone surrogate in a dict key, an int past 64 bits, nesting past
its recursion limit) fails in ``put`` with an ``InvalidValueError`` naming the channel
(the saver turns the serializer's ``TypeError`` into it): nothing of the refused
checkpoint is stored and the thread's checkpoints read back unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("langgraph", reason="pip install 'agentckpt[langgraph]'")

from langgraph.checkpoint.base import empty_checkpoint

from agentckpt import InvalidValueError, Limits, Store
from agentckpt.integrations.langgraph import AgentckptSaver
from agentckpt.integrations.langgraph.saver import DEFAULT_POLICY
from tests.support.dbsql import run_sql


def nest(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


def put(saver: AgentckptSaver, values: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = dict(values)
    checkpoint["channel_versions"] = {k: 1 for k in values}
    cfg = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    meta = {"source": "loop", "step": 0, "parents": {}, **metadata}
    return saver.put(cfg, checkpoint, meta, checkpoint["channel_versions"])  # type: ignore[arg-type]


UNENCODABLE: dict[str, Callable[[], Any]] = {
    "lone-surrogate-key": lambda: {"k\udc00": 1},
    "10**5000": lambda: 10**5000,
    "depth-500": lambda: nest(500),
    "depth-20000": lambda: nest(20000),
}


def stored(url: str) -> list[tuple[Any, ...]]:
    return run_sql(url, "SELECT run_id, step, checksum FROM steps ORDER BY run_id, step")


@pytest.mark.parametrize("where", ["value", "metadata"])
@pytest.mark.parametrize("name", sorted(UNENCODABLE))
def test_an_unencodable_value_stores_nothing(url: str, name: str, where: str) -> None:
    with AgentckptSaver.from_url(url) as saver:
        first = put(saver, {"a": 1, "text": "kept \x00 nul"})
        before = stored(url)
        bad = UNENCODABLE[name]()
        values, metadata = ({"v": bad}, {}) if where == "value" else ({"a": 2}, {"note": bad})
        with pytest.raises(InvalidValueError) as raised:
            put(saver, values, **metadata)
        # The channel (an item of it when the value is a list), or the metadata.
        named = "/channel_values/v" if where == "value" else "/metadata"
        assert raised.value.path.startswith(named), raised.value.path
        assert stored(url) == before
        latest = saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": ""}})
        assert latest is not None
        assert (
            latest.config["configurable"]["checkpoint_id"]
            == (first["configurable"]["checkpoint_id"])
        )
        assert latest.checkpoint["channel_values"] == {"a": 1, "text": "kept \x00 nul"}


def read_back(url: str, values: dict[str, Any], **metadata: Any) -> Any:
    """Put a checkpoint; return it as a fresh saver reads it."""
    with AgentckptSaver.from_url(url) as saver:
        config = put(saver, values, **metadata)
    with AgentckptSaver.from_url(url) as fresh:
        got = fresh.get_tuple(config)
    assert got is not None
    return got


def test_values_langgraph_can_carry_round_trip(url: str) -> None:
    values = {"nan": math.nan, "inf": -math.inf, "nul": "a\x00b", "big": 2**64 - 1}
    out = read_back(url, values).checkpoint["channel_values"]
    assert math.isnan(out["nan"])
    assert (out["inf"], out["nul"], out["big"]) == (-math.inf, "a\x00b", 2**64 - 1)


@pytest.mark.xfail(
    strict=True,
    reason="LangGraph's msgpack serializer turns a lone surrogate into '?' (silently changed); "
    "the saver neither keeps nor refuses it (refusing would mean walking every channel "
    "value for surrogates before LangGraph's serializer sees it)",
)
def test_a_lone_surrogate_in_a_channel_value_is_kept_or_refused(url: str) -> None:
    try:
        got = read_back(url, {"lone": "a\ud800b"}).checkpoint["channel_values"]["lone"]
    except InvalidValueError:
        return  # refused: fine
    # No lone surrogate in the failure's text: pytest-xdist cannot send it between processes.
    kept = got == "a\ud800b"
    assert kept, f"read back as {got!a}"


@pytest.mark.parametrize("name", ["10**5000", "depth-20000"])
def test_an_unencodable_value_is_an_invalid_value_error(url: str, name: str) -> None:
    with AgentckptSaver.from_url(url) as saver, pytest.raises(InvalidValueError) as raised:
        put(saver, {"v": UNENCODABLE[name]()})
    assert raised.value.path in ("/channel_values/v", "/channel_values/v/0")


def test_a_channel_value_over_the_size_limit_stores_nothing(url: str) -> None:
    """A bytes channel value is a blob of the checkpoint's commit; one over
    ``Limits.max_bytes`` is refused before anything is sent (row 21)."""
    limit = 1024 * 1024
    store = Store.connect(url, limits=Limits(max_bytes=limit), policy=DEFAULT_POLICY)
    with AgentckptSaver(store=store) as saver:
        put(saver, {"small": b"x" * 10})
        before = stored(url)
        with pytest.raises(InvalidValueError, match=rf"{2 * limit} bytes, over the limit"):
            put(saver, {"big": b"x" * (2 * limit)})
        assert stored(url) == before
        assert run_sql(url, "SELECT count(*) FROM blobs WHERE size > 100") == [(0,)]
    store.close()
