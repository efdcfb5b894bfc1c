"""Properties of the redactors that no corpus can list: redacting twice changes nothing,
a placeholder is never redacted again, and text without secrets comes back unchanged."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from agentckpt.redaction import DEFAULT_REDACTORS, luhn_valid, placeholder, redact, redact_text

# Letters and punctuation only: no digit runs (phones, cards) and no '@' (emails).
PLAIN = st.text(alphabet=string.ascii_letters + " .,;!?()'\n", max_size=200)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | PLAIN,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(PLAIN, inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_redacting_twice_is_redacting_once(text: str) -> None:
    once, _ = redact_text(text, DEFAULT_REDACTORS)
    assert redact_text(once, DEFAULT_REDACTORS) == (once, [])


@settings(max_examples=200, deadline=None)
@given(JSON)
def test_values_without_secrets_come_back_unchanged(value: object) -> None:
    assert redact(value, DEFAULT_REDACTORS) == (value, [])


def test_placeholders_are_never_redacted() -> None:
    kinds = {r.kind for r in DEFAULT_REDACTORS}
    text = " ".join(placeholder(k) for k in sorted(kinds))
    assert redact_text(text, DEFAULT_REDACTORS) == (text, [])


@given(st.integers(min_value=10**12, max_value=10**19 - 1))
def test_luhn_accepts_exactly_one_check_digit_in_ten(number: int) -> None:
    body = str(number)[:-1]
    valid = [d for d in range(10) if luhn_valid(f"{body}{d}")]
    assert len(valid) == 1
