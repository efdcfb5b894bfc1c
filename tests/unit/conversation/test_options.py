"""ConversationOptions refuses settings of the wrong type when it is made (NaN and True
passed its range checks)."""

from __future__ import annotations

import pytest

from agentckpt import ConfigurationError
from agentckpt.conversation import ConversationOptions

COUNTS = ["blob_threshold", "archive_threshold", "archive_target", "archive_keep_turns"]


@pytest.mark.parametrize("field", COUNTS)
@pytest.mark.parametrize("bad", [float("nan"), True, 1.5, "8"])
def test_a_count_that_is_not_an_int_is_refused(field: str, bad: object) -> None:
    with pytest.raises(ConfigurationError, match=f"{field} must be an int, got {bad!r}"):
        ConversationOptions(**{field: bad})  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), True, "0.5", None])
def test_a_flush_interval_that_is_not_a_finite_number_is_refused(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="flush_interval must be a finite number"):
        ConversationOptions(flush_interval=bad)  # type: ignore[arg-type]


def test_good_settings_are_kept() -> None:
    options = ConversationOptions(flush_interval=0, blob_threshold=0, archive_target=None)
    assert (options.flush_interval, options.blob_threshold, options.archive_target) == (0, 0, None)
    assert options.target_bytes == options.archive_threshold // 2
