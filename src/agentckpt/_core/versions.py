"""Schema versions of the application state stored in checkpoints.

An agent's state shape changes as its code evolves; checkpoints written by old code must
still resume. The state (a dict) carries its version under a key, and a chain of upgrade
functions brings an old state to the current version when it is loaded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from agentckpt.errors import StateVersionError

__all__ = ["StateMigrations", "Upgrade"]

Upgrade = Callable[[Any], Any]
"""An upgrade function: takes a state at version N and returns it at version N+1."""

F = TypeVar("F", bound=Upgrade)


class StateMigrations:
    """The current state version and the upgrade steps that lead to it.

    ``current`` is the version the code works with; each registered function turns a state
    of version N into version N+1 (it may mutate and return its argument, or build a new
    dict). The version is read from, and written to, ``state[key]``; a state without an int
    there (or that is not a dict) is version 1. Upgrade functions need not set the version:
    :meth:`upgrade` does it after each step.

    Example::

        migrations = StateMigrations(current=3)

        @migrations.register(1)
        def split_name(state):
            first, _, last = state.pop("name").partition(" ")
            return {**state, "first": first, "last": last}

        @migrations.register(2)
        def add_tags(state):
            state["tags"] = []
            return state

        state, changed = migrations.upgrade({"name": "Ada Lovelace"})
        # state == {"first": "Ada", "last": "Lovelace", "version": 3, "tags": []}
    """

    def __init__(self, current: int = 1, *, key: str = "version") -> None:
        if type(current) is not int or current < 1:
            raise ValueError(f"current must be an int >= 1, got {current!r}")
        if type(key) is not str:
            raise TypeError(f"key must be a str, got {type(key).__name__}")
        self.current = current
        self.key = key
        self._steps: dict[int, Upgrade] = {}

    def __repr__(self) -> str:
        steps = sorted(self._steps)
        return f"StateMigrations(current={self.current}, key={self.key!r}, steps_from={steps})"

    def add(self, from_version: int, fn: Upgrade) -> None:
        """Register ``fn`` as the upgrade from ``from_version`` to ``from_version + 1``.

        Raises:
            ValueError: ``from_version`` is not in ``1 .. current - 1``, or already has a step.
            TypeError: ``fn`` is not callable.
        """
        if type(from_version) is not int or not 1 <= from_version < self.current:
            raise ValueError(
                f"an upgrade must start from a version in 1..{self.current - 1} "
                f"(current is {self.current}), got {from_version!r}"
            )
        if not callable(fn):
            raise TypeError(f"upgrade from version {from_version} is not callable: {fn!r}")
        if from_version in self._steps:
            raise ValueError(f"an upgrade from version {from_version} is already registered")
        self._steps[from_version] = fn

    def register(self, from_version: int) -> Callable[[F], F]:
        """Decorator form of :meth:`add`; returns the function unchanged."""

        def decorator(fn: F) -> F:
            self.add(from_version, fn)
            return fn

        return decorator

    def version_of(self, state: Any) -> int:
        """The version of ``state``: ``state[key]`` if it is an int, else 1."""
        if type(state) is dict:
            found = state.get(self.key)
            # bool is an int subclass, but True is not a version.
            if type(found) is int:
                return found
        return 1

    def needs_upgrade(self, state: Any) -> bool:
        """Tell whether :meth:`upgrade` would change ``state`` (or refuse it)."""
        return self.version_of(state) != self.current

    def upgrade(self, state: Any) -> tuple[Any, bool]:
        """Bring ``state`` to the current version; return ``(state, changed)``.

        ``changed`` is False, and ``state`` is returned as is, if it already is current.

        Raises:
            StateVersionError: the state is newer than ``current`` (written by newer code),
                a step on the way has no registered upgrade, or a step did not return a dict.
        """
        version = self.version_of(state)
        if version > self.current:
            raise StateVersionError(
                f"state has version {version}, newer than this code's current version "
                f"{self.current}; upgrade the code that reads it"
            )
        if version == self.current:
            return state, False
        while version < self.current:
            step = self._steps.get(version)
            if step is None:
                raise StateVersionError(
                    f"state has version {version} but the current version is "
                    f"{self.current}, and no upgrade from version {version} to "
                    f"{version + 1} is registered"
                )
            state = step(state)
            if type(state) is not dict:
                raise StateVersionError(
                    f"the upgrade from version {version} to {version + 1} returned a "
                    f"{type(state).__name__}, not a dict"
                )
            version += 1
            state[self.key] = version
        return state, True
