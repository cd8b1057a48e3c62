"""The shared word rule and the search documents built from it.

Generated documents and run-time queries must split text identically, so the tokenizer is
checked against a literal, character-by-character reading of the rule, over all of Unicode.
"""

from __future__ import annotations

import json
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgen.runtime.search.document import SearchDocument, search_text, tokenize

INVALID_COUNT = "tool search document has an invalid word count"
LENGTH_MISMATCH = "tool search document length does not match its word counts"


def reference_tokenize(text: str) -> list[str]:
    """The rule as written: lower-case, split at non-(letter or decimal digit), drop empties."""
    words: list[str] = []
    current: list[str] = []
    for char in text.lower():
        if char.isalpha() or char.isdecimal():
            current.append(char)
        elif current:
            words.append("".join(current))
            current = []
    if current:
        words.append("".join(current))
    return words


def test_every_code_point_is_classified_by_the_rule() -> None:
    # Each character sits between two letters, so it either joins them or splits them.
    for start in range(0, sys.maxunicode + 1, 0x10000):
        text = " ".join(f"x{chr(point)}y" for point in range(start, start + 0x10000))
        assert tokenize(text) == reference_tokenize(text), hex(start)


@given(st.text())
def test_matches_the_rule_on_any_text(text: str) -> None:
    assert tokenize(text) == reference_tokenize(text)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("records.search", ["records", "search"]),
        ("records_search", ["records", "search"]),
        ("Search Search records", ["search", "search", "records"]),
        ("look_up_v2 by ID-42", ["look", "up", "v2", "by", "id", "42"]),
        ("Café crème, naïve", ["café", "crème", "naïve"]),
        ("日本語のツール", ["日本語のツール"]),
        # Arabic-Indic digits are decimal digits; superscripts and Roman numerals are not.
        ("ص١٢٣ x²y Ⅻz", ["ص١٢٣", "x", "y", "z"]),
        # Combining marks are neither letters nor digits, so they split words.
        ("e\u0301t\u00e9", ["e", "té"]),
        ("", []),
        ("  ...  __ -- ", []),
    ],
)
def test_examples(text: str, words: list[str]) -> None:
    assert tokenize(text) == words


def test_search_text_puts_the_id_first() -> None:
    text = search_text("records.search", "Search", "Search records by query.")
    assert text == "records.search Search Search records by query."


def test_from_text_counts_repeats_and_sorts_terms() -> None:
    document = SearchDocument.from_text("records.search Search Search records by query.")
    assert document.terms == {"by": 1, "query": 1, "records": 2, "search": 3}
    assert list(document.terms) == ["by", "query", "records", "search"]
    assert document.length == 7
    document.validate()


def test_empty_document_is_valid() -> None:
    document = SearchDocument.from_text(" . ")
    assert document == SearchDocument(terms={}, length=0)
    document.validate()


@pytest.mark.parametrize(
    ("terms", "length", "message"),
    [
        ({"": 1}, 1, INVALID_COUNT),
        ({"records": 0}, 0, INVALID_COUNT),
        ({"records": -1}, -1, INVALID_COUNT),
        ({"records": True}, 1, INVALID_COUNT),
        ({"records": 1.0}, 1, INVALID_COUNT),
        ({"records": 2}, 1, LENGTH_MISMATCH),
        ({"records": 1, "search": 1}, 3, LENGTH_MISMATCH),
        ({}, 1, LENGTH_MISMATCH),
        ({"records": 1}, True, LENGTH_MISMATCH),
    ],
)
def test_validate_rejects(terms: dict[str, object], length: object, message: str) -> None:
    document = SearchDocument(terms=terms, length=length)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=f"^{message}$"):
        document.validate()


def test_to_json_sorts_terms() -> None:
    document = SearchDocument(terms={"search": 2, "records": 1}, length=3)
    assert json.dumps(document.to_json()) == ('{"length": 3, "terms": {"records": 1, "search": 2}}')


@given(st.text())
def test_json_round_trip(text: str) -> None:
    document = SearchDocument.from_text(text)
    encoded = json.loads(json.dumps(document.to_json()))
    assert SearchDocument.from_json(encoded) == document
    assert hash(SearchDocument.from_json(encoded)) == hash(document)


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ([], "must be a JSON object"),
        ({"length": 0}, "missing keys \\['terms'\\]"),
        ({"length": 0, "terms": {}, "title": "x"}, "unknown keys \\['title'\\]"),
        ({"length": "1", "terms": {"a": 1}}, "length must be an integer"),
        ({"length": 1.0, "terms": {"a": 1}}, "length must be an integer"),
        ({"length": False, "terms": {}}, "length must be an integer"),
        ({"length": 1, "terms": [["a", 1]]}, "terms must be a JSON object"),
        ({"length": 1, "terms": {"a": 1.0}}, INVALID_COUNT),
        ({"length": 1, "terms": {"a": True}}, INVALID_COUNT),
        ({"length": 1, "terms": {"a": "1"}}, INVALID_COUNT),
        ({"length": 0, "terms": {"a": 0}}, INVALID_COUNT),
        ({"length": 1, "terms": {"": 1}}, INVALID_COUNT),
        ({"length": 2, "terms": {"a": 1}}, LENGTH_MISMATCH),
    ],
)
def test_from_json_is_strict(obj: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SearchDocument.from_json(obj)


def test_from_json_sorts_terms() -> None:
    document = SearchDocument.from_json({"terms": {"b": 1, "a": 2}, "length": 3})
    assert list(document.terms) == ["a", "b"]
