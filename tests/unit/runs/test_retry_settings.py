"""RetryPolicy refuses a setting that is not a finite number when it is made (NaN passed
every range check, True was taken for 1)."""

from __future__ import annotations

import dataclasses

import pytest

from agentckpt import ConfigurationError
from agentckpt.runs import RetryPolicy

FIELDS = [f.name for f in dataclasses.fields(RetryPolicy)]


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), True, "1", None])
def test_a_setting_that_is_not_a_finite_number_is_refused(field: str, bad: object) -> None:
    with pytest.raises(ConfigurationError, match=f"RetryPolicy.{field} must be"):
        RetryPolicy(**{field: bad})  # type: ignore[arg-type]


def test_good_settings_are_kept() -> None:
    policy = RetryPolicy(max_attempts=1, initial_delay=0, multiplier=1, max_delay=0, jitter=1)
    assert dataclasses.astuple(policy) == (1, 0, 1, 0, 1)
