"""Size and nesting limits of registry declarations: the fast count of JSON's own types (and
of parts measured before) gives exactly the exact walk's count, nesting and verdicts."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from agentgen.runtime.contracts.schema_inspection import Bounds, SchemaProblem, check_bounds

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=12)
)
#: Arrays of small integers (a search document's counts), booleans and larger ones mixed in.
counts = st.lists(st.integers(min_value=-9, max_value=9) | st.booleans(), max_size=6)
json_values = st.recursive(
    scalars | st.dictionaries(st.text(max_size=6), counts, min_size=5, max_size=8),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=6), children, max_size=5)
    ),
    max_leaves=40,
)


def outcome(value: Any, max_bytes: int, max_depth: int, **kwargs: Any) -> tuple[int, int] | str:
    try:
        found = check_bounds(value, max_bytes=max_bytes, max_depth=max_depth, **kwargs)
    except SchemaProblem as exc:
        return str(exc)
    return found.size, found.depth


def other_types(value: Any) -> Any:
    """The same JSON in other types (ordered dicts, tuples), which only the exact walk reads."""
    if isinstance(value, dict):
        return OrderedDict((key, other_types(item)) for key, item in value.items())
    if isinstance(value, list):
        return tuple(other_types(item) for item in value)
    return value


def exact(value: Any, max_bytes: int, max_depth: int) -> tuple[int, int] | str:
    """The exact walk's outcome (node by node, stopping at the first limit it reaches)."""
    return outcome(other_types(value), max_bytes, max_depth)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_the_fast_count_is_the_exact_walk(value: Any) -> None:
    found = exact(value, 10**9, 10**6)
    assert isinstance(found, tuple)
    size, depth = found
    for max_bytes in (size - 1, size):
        for max_depth in (max(depth - 1, 0), depth):
            assert outcome(value, max_bytes, max_depth) == exact(value, max_bytes, max_depth)


def test_plain_says_whether_the_value_is_made_of_json_types_only() -> None:
    class Text(str):
        pass

    class Model(BaseModel):
        name: str = "x"

    def plain(value: Any) -> bool:
        return check_bounds(value, max_bytes=10**6, max_depth=10).plain

    assert plain({"a": [1, 2.5, True, None, "x", {"b": []}]})
    assert plain("x") and plain(3)
    for other in ({"a": (1,)}, {"a": Text("x")}, {1: "x"}, OrderedDict(a=1), Model(), [Model()]):
        assert not plain(other), other


def test_a_measured_part_counts_as_measured_within_the_nesting_limit() -> None:
    part: dict[str, Any] = {"type": "object", "properties": {"x": {"type": "string"}}}
    measured = check_bounds(part, max_bytes=10**6, max_depth=10)
    assert measured == Bounds(size=measured.size, depth=3, plain=True)
    whole = {"payload": part, "other": [part]}
    expected = outcome(whole, 10**6, 10)
    seen = {id(part): measured}
    assert outcome(whole, 10**6, 10, measured=seen) == expected
    # A wrong measure shows that it is used instead of walking the part again.
    wrong = {id(part): Bounds(measured.size + 100, measured.depth, True)}
    assert isinstance(expected, tuple)
    assert outcome(whole, 10**6, 10, measured=wrong) == (expected[0] + 200, expected[1])


@pytest.mark.parametrize("max_depth", [3, 4, 5])
def test_a_measured_part_nested_beyond_the_limit_is_refused_as_before(max_depth: int) -> None:
    part: dict[str, Any] = {"type": "object", "properties": {"x": {"type": "string"}}}
    measured = {id(part): check_bounds(part, max_bytes=10**6, max_depth=10)}
    whole = {"a": {"b": part}}  # the part's deepest object sits at level 5
    assert outcome(whole, 10**6, max_depth, measured=measured) == exact(whole, 10**6, max_depth)
    assert ("deeper" in str(outcome(whole, 10**6, max_depth))) == (max_depth < 5)


def test_models_are_read_through_their_fields() -> None:
    class Inner(BaseModel):
        terms: dict[str, list[int]] = {}

    class Outer(BaseModel):
        name: str
        inner: Inner
        tags: list[str] = []

    value = Outer(name="a.b", inner=Inner(terms={w: [1, 0, 2, 0, 0] for w in "abcdef"}))
    fields = {"name": "a.b", "inner": {"terms": value.inner.terms}, "tags": []}
    assert outcome(value, 10**6, 10) == exact(fields, 10**6, 10) == exact(value, 10**6, 10)
