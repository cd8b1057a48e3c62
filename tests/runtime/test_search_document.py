"""The shared word rule and the search documents built from it.

Generated documents and run-time queries must split text identically, so the tokenizer is
checked against a literal, character-by-character reading of the rule, over all of Unicode.
"""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgen.runtime.search import document as documents
from agentgen.runtime.search.analysis import SEARCH_VERSION
from agentgen.runtime.search.document import (
    CLASSIC_VERSION,
    MAX_WORD_COUNT,
    SearchDocument,
    parameter_text,
    search_document,
    search_text,
    tokenize,
)
from agentgen.runtime.search.index import Ranking, SearchEntry, SearchIndex

INVALID_COUNT = "tool search document has an invalid word count"


#: Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt), as ranges, less the
#: zero-width space (a word separator) and the Hangul fillers (letters).
DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200C, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)  # fmt: skip


def ignorable(char: str) -> bool:
    return any(low <= ord(char) <= high for low, high in DEFAULT_IGNORABLE)


def reference_tokenize(text: str) -> list[str]:
    """The rule as written: default-ignorable characters removed, NFKC, lower-case, split at
    what is neither a letter, a decimal digit nor a combining mark (Mn, Mc) continuing a word,
    drop empties."""
    words: list[str] = []
    current: list[str] = []
    visible = "".join(char for char in text if not ignorable(char))
    for char in unicodedata.normalize("NFKC", visible).lower():
        continues = bool(current) and unicodedata.category(char) in ("Mn", "Mc")
        if char.isalpha() or char.isdecimal() or continues:
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
        # Arabic-Indic digits are decimal digits; NFKC reads superscripts as digits and Roman
        # numerals as letters; other numeric characters (Tamil ten) are neither, and split.
        ("ص١٢٣ x²y Ⅻz a\u0bf0b", ["ص١٢٣", "x2y", "xiiz", "a", "b"]),
        # Text is read in NFKC: a decomposed "été" (NFD, as macOS and PDF copies write it) is
        # one word, as the composed one is (combining marks alone would split it).
        ("e\u0301te\u0301 \u00e9t\u00e9", ["été", "été"]),
        # Fullwidth letters and ligatures are the plain ones.
        ("ＰＤＦ ﬁle", ["pdf", "file"]),
        # A Persian word is one word with its zero-width non-joiner (as Persian keyboards type
        # it) and without (as others do); it split at the non-joiner.
        ("می\u200cخواهم میخواهم", ["میخواهم", "میخواهم"]),
        # Combining marks stay in their word: Hindi's vowel signs and virama (the consonants
        # alone were the words), a Latin letter with an accent NFKC cannot compose. The
        # joiner and non-joiner that pick how a conjunct is drawn are removed.
        ("हिन्दी नमस्ते", ["हिन्दी", "नमस्ते"]),
        ("क्\u200dष क्\u200cष क्ष", ["क्ष", "क्ष", "क्ष"]),
        ("தமிழ் ශ්\u200dරී", ["தமிழ்", "ශ්රී"]),
        ("q\u0303x", ["q\u0303x"]),
        # Other invisible characters are removed as well: a soft hyphen, a direction mark, a
        # variation selector. The zero-width space separates words, as a space does.
        (
            "infor\u00admation \u200fabc\u200e x\ufe0fy a\u200bb",
            ["information", "abc", "xy", "a", "b"],
        ),
        # Emoji are no words, joined (ZWJ sequences) or not; a keycap's enclosing mark is not
        # part of its digit, and a mark after a split numeric character goes with it.
        ("👩\u200d💻coder 1\ufe0f\u20e3 🏳\ufe0f\u200d🌈", ["coder", "1"]),
        ("a\u0bf0\u0301b", ["a", "b"]),
        ("", []),
        ("  ...  __ -- ", []),
    ],
)
def test_examples(text: str, words: list[str]) -> None:
    assert tokenize(text) == words


@pytest.mark.parametrize("ranking", ["fields", "classic"])
def test_decomposed_text_is_found_by_composed_queries(ranking: Ranking) -> None:
    # A description pasted from macOS or a PDF holds NFD "résumé": its words were "re" and
    # "sume", and the query "résumé" (NFC, as models write it) found nothing.
    nfd = unicodedata.normalize("NFD", "Parse a résumé file")
    assert nfd != "Parse a résumé file"
    entries = [
        SearchEntry("cv.parse", search_document("cv.parse", "Parse", nfd), text=search_text(
            "cv.parse", "Parse", nfd)),
        SearchEntry("mail.send", search_document("mail.send", "Send", "Send an email"),
                    text=search_text("mail.send", "Send", "Send an email")),
    ]  # fmt: skip
    index = SearchIndex(entries, ranking)
    for query in ("résumé", unicodedata.normalize("NFD", "résumé"), "ＲÉＳＵＭÉ"):
        assert [hit.tool_id for hit in index.search(query)] == ["cv.parse"], query


@pytest.mark.parametrize("ranking", ["fields", "classic"])
@pytest.mark.parametrize(
    ("written", "typed"),
    [
        # Persian keyboards type the zero-width non-joiner, others leave it out.
        ("فایل\u200cهای من را فهرست کن", "فایلهای"),
        ("فایلهای من را فهرست کن", "فایل\u200cهای"),
        # Hindi: a description and a query share the word, vowel signs and all; the
        # consonants alone ("ह न द") matched "हाँ नदी" as well.
        ("हिन्दी में अनुवाद करें", "हिन्दी"),
    ],
)
def test_words_are_found_however_their_invisible_characters_were_typed(
    ranking: Ranking, written: str, typed: str
) -> None:
    def entry(tool_id: str, title: str, description: str) -> SearchEntry:
        document = search_document(tool_id, title, description)
        return SearchEntry(tool_id, document, text=search_text(tool_id, title, description))

    index = SearchIndex(
        [entry("files.list", "List", written), entry("rivers.find", "Find", "हाँ नदी")], ranking
    )
    assert [hit.tool_id for hit in index.search(typed)] == ["files.list"]


def test_search_text_puts_the_id_first() -> None:
    text = search_text("records.search", "Search", "Search records by query.")
    assert text == "records.search Search Search records by query."


def test_from_text_counts_repeats_and_sorts_terms() -> None:
    document = SearchDocument.from_text("records.search Search Search records by query.")
    assert document.version == CLASSIC_VERSION
    assert document.terms == {"by": (1,), "query": (1,), "records": (2,), "search": (3,)}
    assert list(document.terms) == ["by", "query", "records", "search"]
    assert document.lengths == (7,)
    document.validate()


def test_search_document_counts_each_field() -> None:
    document = search_document(
        "records.searchRecords",
        "Search records",
        "Searches the records by query.",
        {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words to look for."},
                "sortOrder": {"enum": ["newest", "oldest"]},
            },
        },
    )
    assert document.version == SEARCH_VERSION
    assert document.fields == ("name", "title", "description", "parameters", "parameter_text")
    assert document.field_terms("name") == {"record": 2, "search": 1}
    assert document.field_terms("title") == {"record": 1, "search": 1}
    assert document.field_terms("description") == {"queri": 1, "record": 1, "search": 1}
    assert document.field_terms("parameters") == {"order": 1, "queri": 1, "sort": 1}
    assert document.field_terms("parameter_text") == {
        "look": 1,
        "newest": 1,
        "oldest": 1,
        "word": 1,
    }
    assert document.lengths == (3, 2, 3, 3, 4)
    document.validate()


def test_parameter_text_follows_references_and_nesting_within_bounds() -> None:
    schema = {
        "type": "object",
        "$defs": {"Loop": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Loop"}}}},
        "properties": {
            "filter": {
                "type": "object",
                "properties": {"status": {"enum": ["open", 3, None]}},
            },
            "items": {"type": "array", "items": {"$ref": "#/$defs/Loop"}},
        },
    }
    names, texts = parameter_text(schema)
    assert names[:3] == ["filter", "status", "items"]
    assert texts == ["open", "3"]
    # The self-referencing definition is read to a bounded depth, not forever.
    assert 1 <= names.count("next") <= 5


@pytest.mark.parametrize(
    ("ref", "holder"),
    [
        ("#/$defs/Filter", "$defs"),
        # draft-07, as zod-to-json-schema (many MCP servers) writes it: was not followed
        ("#/definitions/Filter", "definitions"),
        ("#/properties/shared~1defs/Filter", "properties"),
    ],
)
def test_parameter_text_follows_every_local_reference(ref: str, holder: str) -> None:
    inner = {
        "type": "object",
        "properties": {
            "customer_email": {"type": "string", "description": "Email address of the customer"}
        },
    }
    schema: dict[str, Any] = {"type": "object", "properties": {"filter": {"$ref": ref}}}
    if holder == "properties":
        schema["properties"]["shared/defs"] = {"Filter": inner}
    else:
        schema[holder] = {"Filter": inner}
    names, texts = parameter_text(schema)
    assert names[:2] == ["filter", "customer_email"]
    assert texts[0] == "Email address of the customer"
    document = search_document("crm.lookup", "Lookup", "Look up records.", schema)
    other = search_document("crm.other", "Other", "Other records.")
    index = SearchIndex([SearchEntry("crm.lookup", document), SearchEntry("crm.other", other)])
    assert [hit.tool_id for hit in index.search("customer email")] == ["crm.lookup"]


def test_parameter_text_skips_references_it_cannot_follow() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"$ref": "#/definitions/Missing"},
            "b": {"$ref": "https://example.com/schema.json"},
            "c": {"$ref": "#/properties/a/0"},
        },
    }
    assert parameter_text(schema) == (["a", "b", "c"], [])


class CountingDefinitions(dict[str, Any]):
    """``$defs`` that count how often a reference is looked up in them."""

    lookups = 0

    def __getitem__(self, key: str) -> Any:
        type(self).lookups += 1
        return super().__getitem__(key)


def test_parameter_text_reads_references_that_fan_out_a_bounded_number_of_times() -> None:
    # 40 branches referring to 40 branches referring to 40...: a 3 KB registry schema that
    # was read once per path (64,000 times, seconds) before its search document was built.
    defs = CountingDefinitions({"d3": {"type": "string"}})
    for level in range(3):
        defs[f"d{level}"] = {"anyOf": [{"$ref": f"#/$defs/d{level + 1}"}] * 40}
    schema = {"type": "object", "$defs": defs, "properties": {"x": {"$ref": "#/$defs/d0"}}}
    CountingDefinitions.lookups = 0
    assert parameter_text(schema) == (["x"], [])
    assert 0 < CountingDefinitions.lookups <= 2 * documents._MAX_PARAMETER_VISITS


def test_parameter_text_reads_a_bounded_amount_of_enum_values_and_text() -> None:
    # Every distinct word read is stemmed (about 0.1 ms each): 25,000 enum values took 3 s.
    huge = {"type": "string", "enum": [f"value{i}" for i in range(25_000)]}
    wordy = {"type": "string", "description": "word " * 20_000}
    names, texts = parameter_text(
        {"type": "object", "properties": {"kind": huge, "note": wordy, "last": huge}}
    )
    assert texts[: documents._MAX_ENUM_VALUES] == huge["enum"][: documents._MAX_ENUM_VALUES]
    assert len(texts) <= 2 * documents._MAX_ENUM_VALUES + 1
    assert sum(map(len, names + texts)) <= documents._MAX_PARAMETER_TEXT
    assert names == ["kind", "note"]  # the text budget ran out before "last"


def test_empty_document_is_valid() -> None:
    document = SearchDocument.from_text(" . ")
    assert document == SearchDocument({}, version=CLASSIC_VERSION)
    assert document.lengths == (0,)
    document.validate()


@pytest.mark.parametrize(
    ("terms", "message"),
    [
        ({"": (1,)}, INVALID_COUNT),
        ({"records": (0,)}, INVALID_COUNT),
        ({"records": (-1,)}, INVALID_COUNT),
    ],
)
def test_validate_rejects(terms: dict[str, tuple[object, ...]], message: str) -> None:
    document = SearchDocument(terms, version=CLASSIC_VERSION)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=f"^{message}$"):
        document.validate()


@pytest.mark.parametrize(
    ("terms", "version", "message"),
    [
        ({"records": (1, 2)}, CLASSIC_VERSION, INVALID_COUNT),
        ({"records": [1]}, CLASSIC_VERSION, INVALID_COUNT),
        ({"records": (1.0,)}, CLASSIC_VERSION, INVALID_COUNT),
        ({"records": (True,)}, CLASSIC_VERSION, INVALID_COUNT),
        ({}, SEARCH_VERSION + 1, f"version {SEARCH_VERSION + 1} is not one this runtime ranks"),
        ({}, True, "version True is not one"),
    ],
)
def test_construction_rejects(terms: dict[str, object], version: object, message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        SearchDocument(terms, version=version)  # type: ignore[arg-type]


def test_to_json_sorts_terms() -> None:
    document = SearchDocument({"search": (2,), "records": (1,)}, version=CLASSIC_VERSION)
    assert json.dumps(document.to_json()) == (
        '{"version": 1, "terms": {"records": [1], "search": [2]}}'
    )


@given(st.text(), st.text(), st.text())
def test_json_round_trip(name: str, title: str, text: str) -> None:
    for document in (SearchDocument.from_text(text), search_document(name, title, text)):
        encoded = json.loads(json.dumps(document.to_json()))
        assert SearchDocument.from_json(encoded) == document
        assert hash(SearchDocument.from_json(encoded)) == hash(document)


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ([], "must be a JSON object"),
        ({"version": 1}, "missing keys \\['terms'\\]"),
        ({"version": 1, "terms": {}, "title": "x"}, "unknown keys \\['title'\\]"),
        ({"version": "1", "terms": {"a": [1]}}, "version '1' is not one"),
        ({"version": 1, "terms": [["a", 1]]}, "terms must be a JSON object"),
        ({"version": 1, "terms": {"a": 1}}, INVALID_COUNT),
        ({"version": 1, "terms": {"a": [1.0]}}, INVALID_COUNT),
        ({"version": 1, "terms": {"a": [True]}}, INVALID_COUNT),
        ({"version": 1, "terms": {"a": ["1"]}}, INVALID_COUNT),
        ({"version": 1, "terms": {"a": [0]}}, INVALID_COUNT),
        ({"version": 1, "terms": {"": [1]}}, INVALID_COUNT),
        ({"version": 2, "terms": {"a": [1]}}, INVALID_COUNT),
    ],
)
def test_from_json_is_strict(obj: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SearchDocument.from_json(obj)


@pytest.mark.parametrize(
    ("count", "shown"),
    [(10**400, "about 2**1328"), (MAX_WORD_COUNT + 1, f"{MAX_WORD_COUNT + 1:,}")],
)
def test_a_count_no_text_can_give_is_refused_naming_the_word(count: int, shown: str) -> None:
    # 10**400 was read, then every search over its catalog raised OverflowError.
    published = {"version": SEARCH_VERSION, "terms": {"find": [1, 0, 0, 0, 0], "search": [0] * 5}}
    published["terms"]["search"][2] = count
    message = (
        f"^tool search document counts the word 'search' {re.escape(shown)} times in one field, "
        f"more than the {MAX_WORD_COUNT:,} a tool's text can hold"
    )
    with pytest.raises(ValueError, match=message):
        SearchDocument.from_json(published)
    built = SearchDocument({"search": (0, 0, count, 0, 0)})
    with pytest.raises(ValueError, match=message):
        built.validate()
    # The largest count is read, and ranks.
    published["terms"]["search"][2] = MAX_WORD_COUNT
    most = SearchDocument.from_json(published)
    other = search_document("good.find", "Find", "Search things")
    entries = [SearchEntry("big.search", most), SearchEntry("good.find", other)]
    hits = SearchIndex(entries).search("search things")
    assert [hit.tool_id for hit in hits] == ["good.find", "big.search"]


def test_the_count_bound_holds_every_declaration_a_registry_admits() -> None:
    from agentgen.runtime.contracts.limits import MAX_DECLARATION_BYTES

    assert MAX_WORD_COUNT >= MAX_DECLARATION_BYTES


def test_from_json_sorts_terms() -> None:
    document = SearchDocument.from_json({"terms": {"b": [1], "a": [2]}, "version": 1})
    assert list(document.terms) == ["a", "b"]


def test_count_tuples_shared_across_documents_stay_bounded() -> None:
    # The shared table lives as long as the process; registries send counts of their choosing,
    # revision after revision, so the table must not keep every distinct tuple ever read.
    limit = documents._MAX_SHARED_COUNTS
    common = SearchDocument.of({"name": ["tool"]}).terms["tool"]
    for batch in range(4):
        terms = {f"w{i}": [batch + 2, i + 1, 0, 0, 0] for i in range(limit // 2)}
        read = SearchDocument.from_json({"version": SEARCH_VERSION, "terms": terms})
        assert read.terms["w7"] == (batch + 2, 8, 0, 0, 0)
        counted = SearchDocument.of({"name": ["x"] * (batch + 2), "title": ["y"] * 3})
        assert counted.terms["y"] == (0, 3, 0, 0, 0)
        single = SearchDocument.from_json(
            {"version": SEARCH_VERSION, "terms": {"z": [1, batch, 0, 0, 9]}}
        )
        assert single.terms["z"] == (1, batch, 0, 0, 9)
    assert len(documents._COUNTS) <= limit
    # A tuple shared before the table filled is shared still.
    assert SearchDocument.of({"name": ["other"]}).terms["other"] is common
