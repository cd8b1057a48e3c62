"""One walk finds lone surrogates (``"\\ud800"``: valid JSON, no UTF-8 text) for every caller;
each writes the place its own way: a JSON Pointer for contracts, ``$.a[0]`` for a provider's
reply, ``"a"[0]`` for the search evaluation's files."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from agentgen.codegen.search_eval import _lone_surrogate as eval_place
from agentgen.runtime.adapters.history import _lone_surrogate as reply_place
from agentgen.runtime.contracts.json_values import (
    LoneSurrogate,
    find_lone_surrogate,
    lone_surrogate,
)

BAD = "half \ud83d"


@pytest.mark.parametrize(
    ("value", "found"),
    [
        ("fine", None),
        ({"a": [1, "b", {"c": None}]}, None),
        (BAD, LoneSurrogate((), BAD)),
        ({"p": {"q": [0, BAD]}}, LoneSurrogate(("p", "q", 1), BAD)),
        ({"p": {BAD: 1}}, LoneSurrogate(("p",), BAD, in_key=True)),
        # Tuples and read-only mappings too (a reply's parts, a record).
        ((0, MappingProxyType({"x": BAD})), LoneSurrogate((1, "x"), BAD)),
        # Entries in order, each key before its value.
        ({"a": BAD, "\udc00": 1}, LoneSurrogate(("a",), BAD)),
        ({"\udc00": BAD}, LoneSurrogate((), "\udc00", in_key=True)),
    ],
)
def test_the_first_lone_surrogate_and_its_place(value: Any, found: LoneSurrogate | None) -> None:
    assert find_lone_surrogate(value) == found


def test_the_code_point_is_the_surrogate_s() -> None:
    assert LoneSurrogate((), "ok \udc01 \ud800").code == "U+DC01"


@pytest.mark.parametrize(
    ("value", "pointer", "reply", "evaluation"),
    [
        (BAD, ("/", "U+D83D"), "$ ('half \\ud83d')", "the value"),
        (
            {"p": {"q": [0, BAD]}},
            ("/p/q/1", "U+D83D"),
            "$.p.q[1] ('half \\ud83d')",
            '"p"."q"[1]',
        ),
        (
            {"p": {BAD: 1}},
            (f"/p/{BAD}", "U+D83D"),
            "$.p ('half \\ud83d')",
            'a key of "p"',
        ),
        ({BAD: 1}, (f"/{BAD}", "U+D83D"), "$ ('half \\ud83d')", "a key"),
        ([[BAD]], ("/0/0", "U+D83D"), "$[0][0] ('half \\ud83d')", "[0][0]"),
    ],
)
def test_each_caller_writes_the_place_its_way(
    value: Any, pointer: tuple[str, str], reply: str, evaluation: str
) -> None:
    assert lone_surrogate(value) == pointer
    assert reply_place(value, "$") == reply
    assert eval_place(value) == evaluation
