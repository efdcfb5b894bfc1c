"""Hypothesis strategies for arbitrary JSON values, shared by the pure-core tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st


def texts(special_text: list[str], *, text_size: int) -> Any:
    """Strings, including the given tricky samples."""
    return st.text(st.characters(codec="utf-8"), max_size=text_size) | st.sampled_from(special_text)


def json_values(special_text: list[str], special_scalars: list[Any], *, text_size: int) -> Any:
    """JSON values: nested lists and dicts of scalars, with the given tricky samples."""
    strings = texts(special_text, text_size=text_size)
    scalars = (
        st.none()
        | st.booleans()
        | st.integers()
        | st.integers(min_value=-(2**300), max_value=2**300)
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.sampled_from(special_scalars)
        | strings
    )
    return st.recursive(
        scalars,
        lambda children: (
            st.lists(children, max_size=5) | st.dictionaries(strings, children, max_size=5)
        ),
        max_leaves=30,
    )
