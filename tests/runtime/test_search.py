"""BM25 tool search: rankings equal a literal reading of the formula, plus exact names.

The index prunes and reorders its additions for speed, so every ranking is compared with a
reference that scores every tool the obvious way and sorts by (score desc, tool ID asc).
"""

from __future__ import annotations

import functools
import math
import operator
import random
import subprocess
import sys
import unicodedata
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgen.runtime.search.analysis import MAX_QUERY_WORDS
from agentgen.runtime.search.document import (
    SearchDocument,
    search_document,
    search_text,
    tokenize,
)
from agentgen.runtime.search.index import K1, B, Ranking, SearchEntry, SearchHit, SearchIndex

Catalog = list[tuple[str, SearchDocument]]


def reference(catalog: Catalog, query: str, limit: int = 5) -> list[tuple[str, float]]:
    if not catalog:
        return []
    count = len(catalog)
    avgdl = sum(document.lengths[0] for _, document in catalog) / count
    # The first MAX_QUERY_WORDS distinct words, as every ranking takes them.
    words = sorted(list(dict.fromkeys(tokenize(query)))[:MAX_QUERY_WORDS])
    df = {word: sum(word in document.terms for _, document in catalog) for word in words}
    hits = []
    for tool_id, document in catalog:
        score = 0.0
        for word in words:
            f = document.terms.get(word, (0,))[0]
            if f:
                idf = math.log(1 + (count - df[word] + 0.5) / (df[word] + 0.5))
                score += idf * f * (K1 + 1) / (f + K1 * (1 - B + B * document.lengths[0] / avgdl))
        if score > 0:
            hits.append((tool_id, score))
    hits.sort(key=lambda hit: (-hit[1], hit[0]))
    return hits[:limit]


def index_of(catalog: Catalog) -> SearchIndex:
    return SearchIndex(
        [SearchEntry(tool_id, document) for tool_id, document in catalog], ranking="classic"
    )


def assert_same(hits: list[SearchHit], expected: list[tuple[str, float]]) -> None:
    """The hits are the reference's, score for score. Where the reference has tools of equal
    score, the index may rank any of them at that place: scores equal on paper can differ in
    their last bit when added up in another order (the index breaks exact ties by tool ID), so
    ``expected`` must be the reference's whole ranking, not just its first hits."""
    assert len({hit.tool_id for hit in hits}) == len(hits) <= len(expected)
    for place, hit in enumerate(hits):
        score = expected[place][1]
        assert hit.score == pytest.approx(score, rel=1e-9, abs=1e-9)
        tied = {tool for tool, other in expected if other == pytest.approx(score, rel=1e-9)}
        assert hit.tool_id in tied, (place, hit, expected[place])
    if len(hits) < len(expected):
        assert not hits or expected[len(hits)][1] <= hits[-1].score * (1 + 1e-9)


def doc(text: str) -> SearchDocument:
    return SearchDocument.from_text(text)


def tool(tool_id: str, title: str, description: str) -> tuple[str, SearchDocument]:
    return tool_id, doc(search_text(tool_id, title, description))


CATALOG: Catalog = [
    tool("records.search", "Search records", "Search records by query."),
    tool("records.lookup", "Look up a record", "Look up a record by its ID."),
    tool("records.analyze", "Analyze records", "Analyze records and report trends."),
    tool("billing.charge", "Charge a card", "Charge a customer's card."),
    tool("notes.write", "Write a note", "Write a note about a record."),
]

WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"]

catalogs = st.lists(
    st.tuples(
        st.text(alphabet="abcdefgh._", min_size=1, max_size=6),
        st.lists(st.sampled_from(WORDS), max_size=8),
    ),
    max_size=25,
    unique_by=lambda item: item[0],
).map(lambda items: [(tool_id, doc(" ".join(words))) for tool_id, words in items])
queries = st.lists(st.sampled_from([*WORDS, "unknown"]), max_size=6).map(" ".join)


@settings(max_examples=400)
@given(catalogs, queries, st.integers(min_value=1, max_value=8))
def test_rankings_equal_the_reference(catalog: Catalog, query: str, limit: int) -> None:
    hits = index_of(catalog).search(query, limit)
    assert len(hits) == len(reference(catalog, query, limit))
    assert_same(hits, reference(catalog, query, len(catalog)))


def zipf_catalog(rng: random.Random, size: int) -> Catalog:
    vocabulary = [f"w{rank}" for rank in range(400)]
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]
    catalog = []
    for number in rng.sample(range(size * 10), size):
        words = rng.choices(vocabulary, weights, k=rng.randint(0, 30))
        catalog.append((f"set{number % 7}.tool_{number}", doc(" ".join(words))))
    return catalog


@pytest.mark.parametrize("size", [50, 3000])
def test_rankings_equal_the_reference_on_zipf_catalogs(size: int) -> None:
    # Large enough for pruning to start from the best tools of each word, not all of them.
    rng = random.Random(size)
    catalog = zipf_catalog(rng, size)
    index = index_of(catalog)
    for _ in range(60):
        query = " ".join(f"w{int(rng.paretovariate(0.6))}" for _ in range(rng.randint(1, 6)))
        limit = rng.choice([1, 3, 5, 10])
        hits = index.search(query, limit)
        assert len(hits) == len(reference(catalog, query, limit))
        assert_same(hits, reference(catalog, query, len(catalog)))


def test_ties_are_broken_by_tool_id_not_by_position() -> None:
    catalog = [(tool_id, doc("records search")) for tool_id in ["c.x", "a.x", "b.x", "d.x"]]
    hits = index_of(catalog).search("records", limit=3)
    assert [hit.tool_id for hit in hits] == ["a.x", "b.x", "c.x"]
    assert len({hit.score for hit in hits}) == 1


def test_query_words_count_once() -> None:
    index = index_of(CATALOG)
    assert index.search("records records search") == index.search("search records")


def test_common_words_have_positive_idf() -> None:
    # A word in every tool still adds a little, as with Lucene's idf (never negative).
    catalog = [("a.one", doc("records x")), ("a.two", doc("records y"))]
    hits = index_of(catalog).search("records")
    assert [hit.tool_id for hit in hits] == ["a.one", "a.two"]
    assert all(hit.score > 0 for hit in hits)


def test_known_scores() -> None:
    hits = index_of(CATALOG).search("search records")
    assert_same(hits, reference(CATALOG, "search records"))
    assert hits[0].tool_id == "records.search"
    # records.search: search tf=3 (df 1), records tf=3 (df 3), 8 words; avgdl = 51/5.
    norm = K1 * (1 - B + B * 8 / (51 / 5))
    search = math.log(1 + (5 - 1 + 0.5) / 1.5) * 3 * (K1 + 1) / (3 + norm)
    records = math.log(1 + (5 - 3 + 0.5) / 3.5) * 3 * (K1 + 1) / (3 + norm)
    assert hits[0].score == pytest.approx(records + search, rel=1e-12)


@pytest.mark.parametrize("query", ["", "   ", "...", "unknown words only"])
def test_queries_without_known_words_find_nothing(query: str) -> None:
    assert index_of(CATALOG).search(query) == []


def test_empty_catalog() -> None:
    index = SearchIndex([])
    assert len(index) == 0
    assert index.search("records") == []
    assert index.explain("records") == []


def test_catalog_of_empty_documents() -> None:
    index = SearchIndex([SearchEntry("a.x", doc("")), SearchEntry("a.y", doc(""))], "classic")
    assert index.search("x") == []
    assert index.search("a.y") == [SearchHit("a.y", 0.0)]


def test_single_tool() -> None:
    catalog = [tool("records.search", "Search", "Search records.")]
    hits = index_of(catalog).search("records")
    assert [hit.tool_id for hit in hits] == ["records.search"]
    # N = 1, n = 1: idf = ln(1 + 0.5 / 1.5); the only document has average length.
    assert hits[0].score == pytest.approx(math.log(4 / 3) * 2 * (K1 + 1) / (2 + K1), rel=1e-12)


def test_limit() -> None:
    index = index_of(CATALOG)
    assert len(index.search("a record records")) == 5
    assert len(index.search("a record records", limit=2)) == 2
    assert [hit.tool_id for hit in index.search("a record records", limit=2)] == [
        tool_id for tool_id, _ in reference(CATALOG, "a record records", 2)
    ]
    assert index.search("records", limit=0) == []
    with pytest.raises(ValueError, match="must not be negative"):
        index.search("records", limit=-1)


@pytest.mark.parametrize("ranking", ["fields", "classic"])
def test_a_limit_past_every_tool_returns_every_match(ranking: Ranking) -> None:
    # Limits come from applications and the CLI unbounded above (--limit 10**20): nothing may
    # be sized by them, and every tool that matches comes back, in the order of smaller limits.
    entries = [
        SearchEntry(i, search_document(i, t, d), text=search_text(i, t, d))
        for i, t, d in [
            ("records.search", "Search records", "Search records by query."),
            ("records.lookup", "Look up a record", "Look up a record by its ID."),
            ("notes.write", "Write a note", "Write a note about a record."),
            ("billing.charge", "Charge a card", "Charge a customer's card."),
        ]
    ]
    index = SearchIndex(entries, ranking)
    every = index.search("record records note", 10**20)
    assert {hit.tool_id for hit in every} == {"records.search", "records.lookup", "notes.write"}
    assert every[:2] == index.search("record records note", 2)
    assert index.search("records.search note", 2**70)[0].tool_id == "records.search"
    assert len(index.explain("record records", 10**20)) == 3


def test_exact_id_comes_first_even_with_no_score() -> None:
    catalog = [*CATALOG, ("zz.x", doc(""))]
    hits = index_of(catalog).search("  ZZ.X ")
    assert hits == [SearchHit("zz.x", 0.0)]


# BM25 ranks a.report below tools that repeat its words; naming it must still put it first.
NAMED: Catalog = [
    ("a.report", doc("report")),
    ("b.summary", doc("a report report a")),
    ("c.other", doc("a report")),
    ("d.none", doc("unrelated")),
]


def test_bm25_alone_ranks_the_named_tool_lower() -> None:
    ranked = [tool_id for tool_id, _ in reference(NAMED, "a report")]
    assert ranked == ["b.summary", "c.other", "a.report"]


@pytest.mark.parametrize("query", ["a.report", " A.Report\n"])
def test_exact_id_comes_first_then_bm25_order_without_duplicates(query: str) -> None:
    index = index_of(NAMED)
    assert [hit.tool_id for hit in index.search(query)] == ["a.report", "b.summary", "c.other"]
    assert [hit.tool_id for hit in index.search(query, limit=2)] == ["a.report", "b.summary"]
    (named, *_) = index.search(query)
    assert named.score == pytest.approx(dict(reference(NAMED, "a report"))["a.report"])


def test_classic_ranks_a_query_by_its_first_distinct_words_only() -> None:
    # classic ranked every distinct word: a model's 140 KB query over 1,000 tools ranked 2,988
    # words and took 1.7 s on the event loop (fields stops at MAX_QUERY_WORDS).
    words = [f"w{number}" for number in range(3 * MAX_QUERY_WORDS)]
    catalog = [(f"t.{word}", doc(f"t {word} shared")) for word in words]
    index = index_of(catalog)
    query = " ".join(words[:3] * 50 + words)
    taken = [word for word, _, _ in index.query_terms(query)]
    assert taken == words[:MAX_QUERY_WORDS]  # in query order, repeats counted once
    # Words past the first MAX_QUERY_WORDS find nothing: they are not ranked.
    assert [hit.tool_id for hit in index.search(query, limit=1000)] == sorted(
        f"t.{word}" for word in words[:MAX_QUERY_WORDS]
    )
    assert_same(index.search(query, limit=10), reference(catalog, query, 1000))


@pytest.mark.parametrize("ranking", ["fields", "classic"])
@pytest.mark.parametrize(
    "query",
    [
        "ｎｏｔｅｓ．ｇｅｔ",  # fullwidth letters and full stop, as East Asian input methods type
        "ＮＯＴＥＳ．ＧＥＴ",  # fullwidth, in other case
        "notes\ufe52get",  # small full stop (compatibility form)
        "\u3000ｎｏｔｅｓ＿ｇｅｔ\u3000",  # the fullwidth alias between ideographic spaces
    ],
)
def test_a_name_in_compatibility_form_is_exact(ranking: Ranking, query: str) -> None:
    # Words are read in NFKC, names were only casefolded: a fullwidth name found the tool's
    # words but was not an exact name, and the tools repeating them ranked first.
    entries = [
        SearchEntry(
            tool_id,
            search_document(tool_id, "", text),
            (tool_id.replace(".", "_"),),
            search_text(tool_id, "", text),
        )
        for tool_id, text in [
            ("notes.get", "One."),
            ("notes.get_notes", "Get notes: get the notes."),
            ("notes.notes_get", "Get notes, get notes by text."),
        ]
    ]
    index = SearchIndex(entries, ranking)
    assert [hit.tool_id for hit in index.search("notes get", 3)][-1] == "notes.get"
    explained = index.explain(query, 3)
    assert [hit.tool_id for hit in explained] == [
        "notes.get",
        "notes.get_notes",
        "notes.notes_get",
    ]
    assert explained[0].exact_name


@pytest.mark.parametrize("letter", ["\ud55c", "\u1ec7"])  # Hangul 한, Vietnamese ệ
def test_a_long_name_decomposed_to_three_times_its_length_is_exact(letter: str) -> None:
    # Names are compared in NFKC, which composes up to four code points into one, so a long
    # query several times the longest name may still spell it (decomposed, as macOS and PDF
    # copies write text); only a query over four times longer cannot, and is not read again.
    name = letter * 400
    decomposed = unicodedata.normalize("NFD", name)
    assert len(decomposed) == 1200
    index = SearchIndex([SearchEntry(name, doc("x")), SearchEntry("y", doc("x"))], "classic")
    assert [(hit.tool_id, hit.exact_name) for hit in index.explain(decomposed, 1)] == [(name, True)]
    assert [(hit.tool_id, hit.exact_name) for hit in index.explain(name.upper(), 1)] == [
        (name, True)
    ]
    assert not any(hit.exact_name for hit in index.explain(decomposed + "x", 2))
    assert index.explain("x " * 1000, 2) == index.explain("x", 2)  # words, and no name


def test_alias_comes_first() -> None:
    entries = [SearchEntry(tool_id, document) for tool_id, document in NAMED]
    entries[0] = SearchEntry("a.report", entries[0].document, aliases=("a_report",))
    index = SearchIndex(entries, ranking="classic")
    assert [hit.tool_id for hit in index.search("A_REPORT")] == [
        "a.report",
        "b.summary",
        "c.other",
    ]
    assert [hit.tool_id for hit in index.search("a_report", limit=1)] == ["a.report"]
    # Without the alias the same words rank it last.
    assert [hit.tool_id for hit in index_of(NAMED).search("a_report")] == [
        "b.summary",
        "c.other",
        "a.report",
    ]


def test_name_inside_a_longer_query_is_not_exact() -> None:
    index = index_of([*CATALOG, ("zz.x", doc(""))])
    assert index.search("zz.x please") == []


def test_duplicate_tool_ids_are_rejected() -> None:
    entries = [SearchEntry("records.search", doc("a")), SearchEntry("records.search", doc("b"))]
    with pytest.raises(ValueError, match=r"lists tool 'records\.search' twice"):
        SearchIndex(entries)


@pytest.mark.parametrize(
    "entries",
    [
        [
            SearchEntry("records.search", doc(""), aliases=("records_x",)),
            SearchEntry("records.lookup", doc(""), aliases=("records_x",)),
        ],
        [
            SearchEntry("records.search", doc("")),
            SearchEntry("records.lookup", doc(""), aliases=("records.search",)),
        ],
    ],
)
def test_a_name_of_two_tools_is_rejected(entries: list[SearchEntry]) -> None:
    with pytest.raises(ValueError, match="also names"):
        SearchIndex(entries)


@pytest.mark.parametrize("ranking", ["fields", "classic"])
def test_tools_named_alike_but_for_case_are_two_tools(ranking: Ranking) -> None:
    # Tool IDs are case-sensitive for providers and registries; the index folded them into one
    # name and raised on the model's first search (after the model call was billed).
    def entry(tool_id: str, text: str) -> SearchEntry:
        document = search_document(tool_id, "User", text)
        alias = tool_id.replace(".", "_")
        return SearchEntry(tool_id, document, (alias,), search_text(tool_id, "User", text))

    lower = entry("records.getUser", "Get a user by ID.")
    upper = entry("records.GetUser", "Get a user by e-mail address.")
    other = entry("records.list", "List every user record of the user directory.")
    index = SearchIndex([other, lower, upper], ranking)
    assert {hit.tool_id for hit in index.search("user", 3)} == {
        "records.getUser",
        "records.GetUser",
        "records.list",
    }
    # Named exactly (ID or alias): that tool first.
    for name, tool in [
        ("records.getUser", "records.getUser"),
        ("records.GetUser", "records.GetUser"),
        ("records_GetUser", "records.GetUser"),
        (" records_getUser ", "records.getUser"),
        # In fullwidth letters (NFKC), the case kept: still the one tool it spells.
        ("ｒｅｃｏｒｄｓ．ｇｅｔＵｓｅｒ", "records.getUser"),
        ("ｒｅｃｏｒｄｓ＿ＧｅｔＵｓｅｒ", "records.GetUser"),
    ]:
        assert index.search(name)[0].tool_id == tool, name
        assert index.explain(name)[0].exact_name
    # In other case, a name both tools spell names neither; one only one tool has still does.
    assert not any(hit.exact_name for hit in index.explain("RECORDS.GETUSER"))
    assert not any(hit.exact_name for hit in index.explain("ＲＥＣＯＲＤＳ．ＧＥＴＵＳＥＲ"))
    assert index.search("RECORDS.LIST")[0].tool_id == "records.list"
    assert index.explain("ＲＥＣＯＲＤＳ．ＬＩＳＴ")[0].exact_name


def test_own_alias_equal_to_id_is_allowed() -> None:
    index = SearchIndex(
        [SearchEntry("records.search", doc("x"), aliases=("Records.Search",))], "classic"
    )
    assert [hit.tool_id for hit in index.search("records.search")] == ["records.search"]


@pytest.mark.parametrize(
    "entries",
    [[SearchEntry("", doc("x"))], [SearchEntry("a.x", doc("x"), aliases=("",))]],
)
def test_empty_names_are_rejected(entries: list[SearchEntry]) -> None:
    with pytest.raises(ValueError, match="empty"):
        SearchIndex(entries)


@settings(max_examples=200)
@given(catalogs, queries)
def test_explain_contributions_add_up_to_the_score(catalog: Catalog, query: str) -> None:
    index = index_of(catalog)
    explained = index.explain(query)
    assert [(hit.tool_id, hit.score) for hit in explained] == [
        (hit.tool_id, hit.score) for hit in index.search(query)
    ]
    words = set(tokenize(query))
    for hit in explained:
        # Added up in the order shown, as a reader of the explanation would.
        assert hit.score == functools.reduce(operator.add, [p.contribution for p in hit.terms], 0.0)
        assert [part.term for part in hit.terms] == sorted(part.term for part in hit.terms)
        document = dict(catalog)[hit.tool_id]
        for part in hit.terms:
            assert part.term in words
            assert part.tf == document.terms[part.term][0] > 0
            assert part.idf > 0


def test_explain_shows_each_word() -> None:
    (first, *_) = index_of(CATALOG).explain("search records unknown")
    assert first.tool_id == "records.search"
    assert not first.exact_name
    counts = Counter({part.term: part.tf for part in first.terms})
    assert counts == {"records": 3, "search": 3}
    named = index_of(CATALOG).explain("records.search")
    assert named[0].exact_name
    assert not any(hit.exact_name for hit in named[1:])


def test_runtime_search_imports_neither_numpy_nor_the_generator() -> None:
    code = (
        "import sys, agentgen.runtime.search.index\n"
        "bad = [m for m in sys.modules if m.split('.')[0] == 'numpy'"
        " or m.startswith(('agentgen.dsl', 'agentgen.codegen'))]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
