"""Tests for state schema versions and their upgrade chain."""

from __future__ import annotations

from typing import Any

import pytest

from agentckpt._core.versions import StateMigrations
from agentckpt.errors import StateVersionError


def make_migrations() -> StateMigrations:
    migrations = StateMigrations(current=3)

    @migrations.register(1)
    def split_name(state: dict[str, Any]) -> dict[str, Any]:
        first, _, last = state.pop("name").partition(" ")
        return {**state, "first": first, "last": last}

    def add_tags(state: dict[str, Any]) -> dict[str, Any]:
        state["tags"] = []
        return state

    migrations.add(2, add_tags)
    return migrations


def test_docstring_example() -> None:
    state, changed = make_migrations().upgrade({"name": "Ada Lovelace"})
    assert changed
    assert state == {"first": "Ada", "last": "Lovelace", "version": 3, "tags": []}


def test_upgrade_from_middle_version() -> None:
    state, changed = make_migrations().upgrade({"version": 2, "first": "A"})
    assert changed
    assert state == {"version": 3, "first": "A", "tags": []}


def test_current_state_is_returned_unchanged() -> None:
    original = {"version": 3, "x": 1}
    state, changed = make_migrations().upgrade(original)
    assert state is original
    assert not changed
    assert not make_migrations().needs_upgrade(original)


def test_each_step_gets_the_version_set() -> None:
    seen: list[int] = []
    migrations = StateMigrations(current=4, key="v")
    for start in (1, 2, 3):

        def step(state: dict[str, Any], start: int = start) -> dict[str, Any]:
            seen.append(state.get("v", 1))
            return state

        migrations.add(start, step)
    state, changed = migrations.upgrade({})
    assert changed
    assert seen == [1, 2, 3]
    assert state == {"v": 4}


@pytest.mark.parametrize(
    ("state", "version"),
    [
        ({"version": 2}, 2),
        ({}, 1),
        ({"version": "2"}, 1),
        ({"version": True}, 1),
        ({"version": 2.0}, 1),
        ([1, 2], 1),
        (None, 1),
        ({"other": 7}, 1),
    ],
)
def test_version_of(state: Any, version: int) -> None:
    assert make_migrations().version_of(state) == version


def test_custom_key() -> None:
    migrations = StateMigrations(current=2, key="schema")
    assert migrations.version_of({"schema": 2, "version": 9}) == 2


def test_newer_state_is_refused() -> None:
    with pytest.raises(StateVersionError, match=r"version 5, newer than .* current version 3"):
        make_migrations().upgrade({"version": 5})
    assert make_migrations().needs_upgrade({"version": 5})


def test_missing_step_is_refused() -> None:
    migrations = StateMigrations(current=3)
    migrations.add(1, lambda state: state)
    with pytest.raises(StateVersionError) as info:
        migrations.upgrade({"x": 1})
    message = str(info.value)
    assert "version 2" in message
    assert "current version is 3" in message
    assert "no upgrade from version 2 to 3" in message


def test_version_zero_has_no_step() -> None:
    with pytest.raises(StateVersionError, match="no upgrade from version 0 to 1"):
        make_migrations().upgrade({"version": 0})


def test_step_returning_non_dict_is_refused() -> None:
    migrations = StateMigrations(current=2)
    migrations.add(1, lambda state: None)
    with pytest.raises(StateVersionError, match="returned a NoneType, not a dict"):
        migrations.upgrade({})


def test_non_dict_state_at_version_one_is_upgraded() -> None:
    migrations = StateMigrations(current=2)
    migrations.add(1, lambda state: {"items": state})
    assert migrations.upgrade([1, 2]) == ({"items": [1, 2], "version": 2}, True)


def test_without_migrations_everything_is_current() -> None:
    migrations = StateMigrations()
    assert migrations.upgrade({"a": 1}) == ({"a": 1}, False)
    assert not migrations.needs_upgrade({"a": 1})


@pytest.mark.parametrize("from_version", [0, 3, 4, -1, True, 1.0])
def test_registration_outside_the_range_is_refused(from_version: Any) -> None:
    migrations = StateMigrations(current=3)
    with pytest.raises(ValueError, match=r"1\.\.2"):
        migrations.add(from_version, lambda state: state)


def test_duplicate_registration_is_refused() -> None:
    migrations = make_migrations()
    with pytest.raises(ValueError, match="already registered"):
        migrations.add(1, lambda state: state)


def test_register_returns_the_function() -> None:
    migrations = StateMigrations(current=2)

    def step(state: dict[str, Any]) -> dict[str, Any]:
        return state

    assert migrations.register(1)(step) is step


def test_non_callable_is_refused() -> None:
    with pytest.raises(TypeError, match="not callable"):
        StateMigrations(current=2).add(1, "nope")  # type: ignore[arg-type]


@pytest.mark.parametrize("current", [0, -1, 1.5, True])
def test_bad_current_is_refused(current: Any) -> None:
    with pytest.raises(ValueError, match="current must be an int"):
        StateMigrations(current=current)


def test_repr_lists_steps() -> None:
    assert repr(make_migrations()) == "StateMigrations(current=3, key='version', steps_from=[1, 2])"
