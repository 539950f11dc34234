"""Strict JSON decoding: the depth of a JSON text read off its brackets, and the limits ``loads`` applies."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envsim.jsonsafe import MAX_DEPTH, JSONLimitError, loads, text_depth, too_deep


def _depth(value):
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


_TRICKY = st.text(alphabet=st.sampled_from(list('[]{}"\\/ab\n\u00e9\u2028\ud800')), max_size=8)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | _TRICKY,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TRICKY, inner, max_size=4), max_leaves=40)


@settings(max_examples=500, deadline=None)
@given(_VALUES, st.booleans(), st.sampled_from([None, 1]))
def test_text_depth_is_the_nesting_of_the_decoded_value(value, ascii_only, indent):
    """Brackets, quotes and backslashes inside strings never count; ASCII-escaped or not, indented or not."""
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent)
    assert text_depth(text) == _depth(value)
    assert all((text_depth(text) > limit) == too_deep(value, limit) for limit in range(4))


@pytest.mark.parametrize("depth", [MAX_DEPTH, MAX_DEPTH + 1])
def test_loads_refuses_one_level_past_the_limit_whatever_the_strings_hold(depth):
    noise = {"code": 'x = "[[[{{{" + "\\"]]]}}}\\\\"' * 40, "list": [[1, 2]] * 150}  # many brackets, in strings too
    text = json.dumps({**noise, "deep": json.loads("[" * (depth - 1) + "]" * (depth - 1))})
    if depth > MAX_DEPTH:
        with pytest.raises(JSONLimitError, match="deeper than 200"):
            loads(text)
    else:
        assert loads(text)["code"] == noise["code"]


def test_loads_still_names_an_over_long_integer_and_refuses_infinity():
    with pytest.raises(JSONLimitError, match="5001 digits"):
        loads('{"n": 1' + "0" * 5000 + "}")
    with pytest.raises(JSONLimitError, match="overflows to infinity"):
        loads('{"x": 1e999}')
    with pytest.raises(json.JSONDecodeError):
        loads('{"x": }')
