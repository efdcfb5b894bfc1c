"""SnapshotPolicy refuses settings of the wrong type or range when it is made, with the
field and the value, instead of a TypeError at the first commit (or a silent cadence)."""

from __future__ import annotations

from typing import Any

import pytest

from agentckpt import SnapshotPolicy

BAD: dict[str, tuple[dict[str, Any], str]] = {
    "interval 0": ({"interval": 0}, "interval"),
    "interval True": ({"interval": True}, "interval"),
    "interval 1.5": ({"interval": 1.5}, "interval"),
    "interval str": ({"interval": "20"}, "interval"),
    "max_chain_bytes negative": ({"max_chain_bytes": -1}, "max_chain_bytes"),
    "max_chain_bytes str": ({"max_chain_bytes": "5"}, "max_chain_bytes"),
    "max_chain_bytes float": ({"max_chain_bytes": 1e6}, "max_chain_bytes"),
    "prune None": ({"prune": None}, "prune"),
    "prune str": ({"prune": "no"}, "prune"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_setting_is_refused_naming_it(case: str) -> None:
    settings, field = BAD[case]
    with pytest.raises(ValueError, match=rf"^{field} must be .*, got {settings[field]!r}"):
        SnapshotPolicy(**settings)


def test_good_settings_are_kept() -> None:
    policy = SnapshotPolicy(interval=1, max_chain_bytes=0, prune=False)
    assert (policy.interval, policy.max_chain_bytes, policy.prune) == (1, 0, False)
    assert SnapshotPolicy() == SnapshotPolicy(interval=20, max_chain_bytes=4 * 1024 * 1024)
