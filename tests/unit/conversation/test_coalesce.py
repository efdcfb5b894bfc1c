"""The coalescing rule of streamed turns, driven by an injected clock (no sleeps)."""

from __future__ import annotations

import pytest

from agentckpt.conversation import Coalescer
from tests.support.conversation import FakeClock


def test_nothing_is_due_without_changes() -> None:
    clock = FakeClock()
    coalescer = Coalescer(0.5, clock=clock)
    clock.advance(10)
    assert not coalescer.dirty
    assert not coalescer.due()


def test_changes_are_due_once_the_interval_has_passed_since_the_last_write() -> None:
    clock = FakeClock()
    coalescer = Coalescer(0.5, clock=clock)
    coalescer.changed()
    clock.advance(0.49)
    assert not coalescer.due()
    clock.advance(0.01)
    assert coalescer.due()
    coalescer.written()
    assert not coalescer.due()
    assert not coalescer.dirty
    coalescer.changed()
    clock.advance(0.3)
    assert not coalescer.due()
    clock.advance(0.2)
    assert coalescer.due()


def test_the_interval_restarts_at_each_write() -> None:
    clock = FakeClock()
    coalescer = Coalescer(1.0, clock=clock)
    clock.advance(5)
    coalescer.written()
    coalescer.changed()
    clock.advance(0.9)
    assert not coalescer.due()


def test_a_zero_interval_writes_every_change() -> None:
    coalescer = Coalescer(0.0, clock=FakeClock())
    coalescer.changed()
    assert coalescer.due()


def test_a_negative_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="interval"):
        Coalescer(-1, clock=FakeClock())
