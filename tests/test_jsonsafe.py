"""Strict JSON decoding: the depth of a JSON text read off its brackets, and the limits ``loads`` applies."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envsim import jsonsafe
from envsim.jsonsafe import (MAX_DEPTH, NOT_DECODED, JSONLimitError, decoded_by_orjson, decoded_utf8, loads,
                             loads_utf8, text_depth, too_deep)


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
    data = text.encode("utf-8")
    assert decoded_by_orjson(data) is not NOT_DECODED  # the orjson path is the one tested beside loads
    if depth > MAX_DEPTH:
        for decode in (loads, lambda _: loads_utf8(data), lambda _: decoded_utf8(data)):
            with pytest.raises(JSONLimitError, match="deeper than 200"):
                decode(text)
    else:
        assert loads(text)["code"] == loads_utf8(data)["code"] == decoded_utf8(data)["code"] == noise["code"]


@st.composite
def _nested_values(draw, depth):
    """A value nesting exactly ``depth`` deep: a chain of lists and objects (each level's kind drawn), the innermost
    empty or holding a scalar, with shallow siblings along the chain."""
    inner = draw(st.sampled_from([[], {}, [0], {"x": None}, ["]]]"]]))
    value, level = inner, _depth(inner)
    while level < depth:
        sibling = draw(st.sampled_from([None, 1, "[[{", [[]], {"a": [1]}]))
        shape = draw(st.integers(0, 3))
        value = [[value], [sibling, value], {"k": value}, {"s": sibling, "k": value}][shape]
        level = 1 + max(level, _depth(sibling) if shape % 2 else 0)  # a sibling may nest deeper than a short chain
    assert _depth(value) == depth
    return value


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.integers(MAX_DEPTH - 3, MAX_DEPTH + 3).flatmap(_nested_values))
def test_written_within_shows_a_value_within_the_limit_and_never_one_past_it(value):
    """orjson's own nesting limit, probed once, answers "within" for every value that is; for a deeper one it never
    does (the caller then reads the depth off the text)."""
    assert jsonsafe._written_within(value, MAX_DEPTH) == (_depth(value) <= MAX_DEPTH)


@settings(max_examples=300, deadline=None)
@given(_VALUES, st.integers(0, 5))
def test_written_within_agrees_with_the_depth_at_small_limits(value, limit):
    """Exact for every value orjson decodes (what the shortcut is used on); never "within" for one past the limit,
    whatever orjson refuses to write (a lone surrogate)."""
    if jsonsafe._written_within(value, limit):
        assert _depth(value) <= limit
    decoded = decoded_by_orjson(json.dumps(value).encode("ascii"))
    if decoded is not NOT_DECODED:
        assert jsonsafe._written_within(decoded, limit) == (_depth(decoded) <= limit)


def test_orjson_nesting_limit_is_where_orjson_stops_writing():
    limit = jsonsafe._orjson_nesting_limit()
    assert limit is not None and limit >= MAX_DEPTH
    import orjson

    written = []
    for kind in (list, dict):
        with pytest.raises(orjson.JSONEncodeError):
            orjson.dumps(jsonsafe._nested(limit + 1, kind))
        try:
            written.append(orjson.dumps(jsonsafe._nested(limit, kind)))
        except orjson.JSONEncodeError:
            pass
    assert written


def test_without_orjson_nothing_is_shown_within_and_the_text_decides(monkeypatch):
    monkeypatch.setattr(jsonsafe, "_orjson", None)
    monkeypatch.setattr(jsonsafe, "_ORJSON_NESTING", [])
    assert jsonsafe._orjson_nesting_limit() is None
    assert not jsonsafe._written_within([1], 5)
    assert decoded_utf8(b"[" * 201 + b"]" * 201) is NOT_DECODED


def test_loads_still_names_an_over_long_integer_and_refuses_infinity():
    with pytest.raises(JSONLimitError, match="5001 digits"):
        loads('{"n": 1' + "0" * 5000 + "}")
    with pytest.raises(JSONLimitError, match="overflows to infinity"):
        loads('{"x": 1e999}')
    with pytest.raises(json.JSONDecodeError):
        loads('{"x": }')


def _identical(a, b) -> bool:
    """Equal with the same types at every level, the same key order and the same float bits (-0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_identical(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_identical(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return a == b


def _agrees_with_json(text: str) -> None:
    """orjson's value, when it gives one, is json's; it never accepts what json refuses."""
    data = text.encode("utf-8", "surrogatepass")
    ours = decoded_by_orjson(data)
    try:
        expected = json.loads(text)
    except ValueError:
        assert ours is NOT_DECODED
        return
    assert ours is NOT_DECODED or _identical(ours, expected), (text, ours, expected)


_NUMBERS = st.integers() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False, allow_infinity=False) \
    | st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, -2**63, -2**63 - 1, 10**18, -0.0, 5e-324, 1.7976931348623157e308])


@settings(max_examples=400, deadline=None)
@given(st.recursive(st.none() | st.booleans() | _NUMBERS | _TRICKY | st.text(max_size=6),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TRICKY, inner, max_size=4),
                    max_leaves=30), st.booleans(), st.sampled_from([None, 1]))
def test_orjson_gives_json_s_values_for_what_json_writes(value, ascii_only, indent):
    """Integers past 64 bits (orjson would read a float), lone surrogates, -0.0 and the extreme floats included."""
    _agrees_with_json(json.dumps(value, ensure_ascii=ascii_only, indent=indent))


_PIECES = ['{', '}', '[', ']', ',', ':', ' ', '\n', '"a"', '"a"', '"\\ud800"', '"\\ud83d\\ude00"', '"\x7f"', '"\x00"',
           '\ufeff', '0', '-0', '1', '01', '-', '.5', '1.', '1e5', '1E+2', '1e400', '-1e400', '1e-400', '0.1e1',
           '1234567890123456789', '18446744073709551616', '9223372036854775808', 'NaN', 'Infinity', '-Infinity',
           'true', 'false', 'null', 'True', '"\u00e9"', '"\\u00e9"', '\t']


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=12).map("".join))
def test_orjson_never_accepts_what_json_refuses_nor_reads_it_otherwise(text):
    """Texts built from JSON's pieces and near-misses: numbers json reads as infinity, NaN, a BOM, raw control
    characters, duplicate keys, leading zeros, trailing commas."""
    _agrees_with_json(text)


@pytest.mark.parametrize("text", ['{"a": 1, "a": 2}', '[1e400]', '[NaN]', '{"n": 1' + "0" * 5000 + "}",
                                  '"\\ud800"', '{"x": }', "[" * 201 + "]" * 201, "[" * 200 + "]" * 200,
                                  "[" * 1100 + "]" * 1100, '["\u00e9", 18446744073709551616, -0.0]'])
@pytest.mark.parametrize("with_orjson", [True, False])
def test_loads_utf8_gives_loads_values_and_errors(text, with_orjson, monkeypatch):
    if not with_orjson:
        monkeypatch.setattr(jsonsafe, "_orjson", None)
    try:
        expected = loads(text)
    except ValueError as exc:
        with pytest.raises(type(exc)) as raised:
            loads_utf8(text.encode("utf-8", "surrogatepass"))
        assert str(raised.value) == str(exc)
    else:
        assert _identical(loads_utf8(text.encode("utf-8", "surrogatepass")), expected)
