"""The default ``fields`` ranking: BM25F over document fields, with synonyms, raised by how much
of a tool's name the query uses, exact names first.

The index prunes and reorders its additions for speed, so rankings are compared with a literal
reading of BM25F that scores every tool and sorts by (score desc, tool ID asc).
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgen.runtime.search import index as index_module
from agentgen.runtime.search.analysis import (
    FIELD_B,
    FIELD_WEIGHTS,
    K1,
    SEARCH_VERSION,
    SYNONYM_WEIGHT,
    identifier_words,
    synonyms,
)
from agentgen.runtime.search.document import SearchDocument, search_document, search_text
from agentgen.runtime.search.index import (
    IDF_EXPONENT,
    NAME_COVERAGE,
    RAISED_DEPTH,
    SearchEntry,
    SearchIndex,
)

Catalog = list[tuple[str, SearchDocument]]


def reference(
    catalog: Catalog, index: SearchIndex, query: str, limit: int = 5
) -> list[tuple[str, float]]:
    """BM25F as written: per field weight over length normalisation, summed; a query word's
    synonyms add to its frequency at their weight; idf of the word itself (of the tools its
    synonyms find when no tool uses it) raised to IDF_EXPONENT; saturated; then the best
    RAISED_DEPTH tools' sums raised by NAME_COVERAGE times the share of the words of the tool's
    name (after its last dot) that are among the query's words and synonyms, and reordered."""
    if not catalog:
        return []
    count = len(catalog)
    width = len(FIELD_WEIGHTS)
    averages = [sum(d.lengths[f] for _, d in catalog) / count for f in range(width)]
    groups: dict[str, list[tuple[str, float]]] = {}
    for word, weight, origin in index.query_terms(query):
        groups.setdefault(word if origin is None else origin, []).append((word, weight))
    terms = {word for word, _, _ in index.query_terms(query)}

    def frequency(document: SearchDocument, word: str) -> float:
        counts = document.terms.get(word)
        if counts is None:
            return 0.0
        return sum(
            FIELD_WEIGHTS[f]
            * counts[f]
            / (
                (1 - FIELD_B[f] + FIELD_B[f] * document.lengths[f] / averages[f])
                if averages[f]
                else 1.0
            )
            for f in range(width)
        )

    idfs = {}
    for own, members in groups.items():
        df = sum(own in d.terms for _, d in catalog) or sum(
            any(word in d.terms for word, _ in members) for _, d in catalog
        )
        idfs[own] = math.log(1 + (count - df + 0.5) / (df + 0.5)) ** IDF_EXPONENT

    scored = []
    for tool_id, document in catalog:
        score = 0.0
        for own, members in sorted(groups.items()):
            tf = sum(weight * frequency(document, word) for word, weight in members)
            if not tf:
                continue
            score += idfs[own] * tf * (K1 + 1) / (tf + K1)
        if score > 0:
            scored.append((-score, tool_id))
    ranked = sorted(scored)

    def raised(score: float, tool_id: str) -> tuple[float, str]:
        name = set(identifier_words(tool_id.rsplit(".", 1)[-1]))
        share = len(name & terms) / len(name) if name else 0.0
        return score * (1 + index_module.NAME_COVERAGE * share), tool_id

    head = sorted(raised(score, tool_id) for score, tool_id in ranked[:RAISED_DEPTH])
    return [(tool_id, -score) for score, tool_id in [*head, *ranked[RAISED_DEPTH:]][:limit]]


def assert_ranked_as(
    index: SearchIndex, query: str, limit: int, expected: list[tuple[str, float]]
) -> None:
    """The hits are the reference's, score for score (``expected``: its whole ranking; tools of
    equal score may take each other's places, since scores equal on paper can differ in their
    last bit when added up in another order); asking for more never changes the first ones,
    and scores never rise down the list."""
    hits = index.search(query, limit)
    assert len(hits) == min(limit, len(expected))
    assert len({hit.tool_id for hit in hits}) == len(hits)
    for place, hit in enumerate(hits):
        score = expected[place][1]
        assert hit.score == pytest.approx(score, rel=1e-9)
        tied = {tool for tool, other in expected if other == pytest.approx(score, rel=1e-9)}
        assert hit.tool_id in tied, (place, hit, expected[place])
    assert index.search(query, limit + 20)[: len(hits)] == hits
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))


def entry(tool_id: str, title: str, description: str, **arguments: str) -> SearchEntry:
    schema = {
        "type": "object",
        "properties": {name: {"type": "string", "description": text} for name, text in
                       arguments.items()},
    }  # fmt: skip
    return SearchEntry(
        tool_id,
        search_document(tool_id, title, description, schema),
        text=search_text(tool_id, title, description),
    )


CATALOG = [
    entry("github.create_issue", "Create Issue", "Create a new issue in a repository.",
          repo="Repository name", summary="Issue title"),
    entry("github.list_pull_requests", "List Pull Requests", "List pull requests of a repo.",
          state="open or closed"),
    entry("gitlab.delete_branch", "Delete Branch", "Delete a branch of a project."),
    entry("calendar.list_events", "List Events", "List upcoming events on a calendar.",
          time_min="Start of the window"),
    entry("maps.geocode", "Geocode", "Convert an address into coordinates."),
    entry("files.read_file", "Read File", "Read the complete contents of a file."),
]  # fmt: skip


def ids(hits: list[object]) -> list[str]:
    return [hit.tool_id for hit in hits]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("query", "tool"),
    [
        ("remove the feature branch", "gitlab.delete_branch"),
        ("erase a branch", "gitlab.delete_branch"),
        ("what are the lat/long of the Eiffel Tower", "maps.geocode"),
        ("which pull requests are still open", "github.list_pull_requests"),
        ("make a new ticket", "github.create_issue"),
        ("show my upcoming meetings", "calendar.list_events"),
        ("get the contents of notes.txt", "files.read_file"),
    ],
)
def test_the_right_tool_and_nothing_for_filler_words(query: str, tool: str) -> None:
    # Stop words ("the", "a", "my") match nothing, so a request finds only the tools its
    # meaningful words (and their synonyms) point at.
    assert ids(SearchIndex(CATALOG).search(query)) == [tool]


@pytest.mark.parametrize(
    ("query", "tool"),
    [
        ("the listPullRequests tool", "github.list_pull_requests"),
        ("createIssue in acme/api", "github.create_issue"),
        ("readFile notes.txt", "files.read_file"),
    ],
)
def test_a_tool_named_in_camel_case_is_found_by_its_name_words(query: str, tool: str) -> None:
    """Tool names are read split at ``_`` and camelCase; a model that writes a tool's name
    as an identifier of its language (``listPullRequests``) finds it as if it wrote the words
    (the query word was ``listpullrequest``, which no document holds)."""
    assert ids(SearchIndex(CATALOG).search(query))[0] == tool


def test_classic_ranks_by_every_word_including_filler() -> None:
    classic = SearchIndex(CATALOG, ranking="classic")
    assert classic.ranking == "classic"
    hits = ids(classic.search("what are the lat/long of the Eiffel Tower"))
    assert "maps.geocode" not in hits and len(hits) >= 3
    assert ids(SearchIndex(CATALOG).search("what are the lat/long of the Eiffel Tower")) == [
        "maps.geocode"
    ]


def test_query_terms_add_synonyms_at_a_lower_weight() -> None:
    terms = SearchIndex(CATALOG).query_terms("remove branch")
    own = [(w, weight, origin) for w, weight, origin in terms if origin is None]
    assert own == [("remov", 1.0, None), ("branch", 1.0, None)]
    added = {w for w, weight, origin in terms if origin == "remov"}
    assert added == set(synonyms("remov"))
    assert all(weight == SYNONYM_WEIGHT for _, weight, origin in terms if origin is not None)


def test_a_query_word_is_never_also_its_own_synonym() -> None:
    terms = SearchIndex(CATALOG).query_terms("delete remove")
    words = [w for w, _, _ in terms]
    assert len(words) == len(set(words))
    assert ("delet", 1.0, None) in terms and ("remov", 1.0, None) in terms


WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "create", "delete", "issue"]
fields = st.lists(st.sampled_from(WORDS), max_size=6).map(" ".join)
# Tool names are made of the same words as queries, or of none of them, so that how much of
# a name a query uses varies.
names = st.one_of(
    st.text(alphabet="abcdef", min_size=1, max_size=5),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map("_".join),
)
catalogs = st.lists(
    st.tuples(names, fields, fields, fields),
    max_size=20,
    unique_by=lambda item: item[0],
).map(
    lambda items: [
        (f"t.{name}", search_document(f"t.{name}", title, text, {
            "type": "object", "properties": {arg: {} for arg in args.split()}}))
        for name, title, text, args in items
    ]
)  # fmt: skip
queries = st.lists(st.sampled_from([*WORDS, "make", "remove", "ticket", "zzz"]), max_size=5).map(
    " ".join
)


@settings(max_examples=300)
@given(catalogs, queries, st.integers(min_value=1, max_value=8))
def test_rankings_equal_the_bm25f_reference(catalog: Catalog, query: str, limit: int) -> None:
    index = SearchIndex([SearchEntry(tool_id, document) for tool_id, document in catalog])
    assert_ranked_as(index, query, limit, reference(catalog, index, query, len(catalog)))


@settings(max_examples=150)
@given(catalogs, queries)
def test_explained_contributions_add_up_by_word_and_by_field(catalog: Catalog, query: str) -> None:
    index = SearchIndex([SearchEntry(tool_id, document) for tool_id, document in catalog])
    for hit in index.explain(query):
        words = functools.reduce(operator.add, [p.contribution for p in hit.terms], 0.0)
        assert hit.score == pytest.approx(words * (1.0 + NAME_COVERAGE * hit.name_coverage))
        assert 0.0 <= hit.name_coverage <= 1.0
        document = dict(catalog)[hit.tool_id]
        for part in hit.terms:
            assert part.tf == sum(document.terms[part.term]) > 0
            assert sum(f.contribution for f in part.fields) == pytest.approx(part.contribution)
            assert {f.field for f in part.fields} <= set(document.fields)
            assert part.weight == (1.0 if part.synonym_of is None else SYNONYM_WEIGHT)
    assert [(hit.tool_id, hit.score) for hit in index.explain(query)] == [
        (hit.tool_id, hit.score) for hit in index.search(query)
    ]


def test_a_rare_word_in_argument_text_does_not_outrank_the_tool_named_for_the_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # "now" occurs once in the catalog, in an argument's example value; "time" names the clock
    # tool but is common. With plain idf the rare word decides; raised to IDF_EXPONENT it no
    # longer outweighs the tool whose name, title and description match.
    catalog = [
        entry("clock.current_time", "Current Time", "Get the current time.", zone="Time zone"),
        entry("metrics.query", "Query Metrics", "Query metrics.",
              start="Start of the window, such as now-1h"),
        *(entry(f"t.tool{i}", f"Tool {i}", f"Do thing {i} at a given time.",
                when=f"When to do thing {i}") for i in range(4)),
    ]  # fmt: skip
    assert IDF_EXPONENT < 1.0
    assert ids(SearchIndex(catalog).search("time now", 2)) == [
        "clock.current_time",
        "metrics.query",
    ]
    monkeypatch.setattr(index_module, "IDF_EXPONENT", 1.0)
    assert ids(SearchIndex(catalog).search("time now", 2)) == [
        "metrics.query",
        "clock.current_time",
    ]


def test_synonyms_add_to_their_word_instead_of_counting_as_words_of_their_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # "MR" and "review" are synonyms of "merge": they add a fifth of their frequency to the
    # tool's frequency of "merge", saturated with it, and so cannot lift the tool that merely
    # mentions them above the one the request names (summed as words of their own, they did).
    monkeypatch.setattr(index_module, "IDF_EXPONENT", 1.0)
    catalog = [
        entry("gl.merge_merge_request", "Merge Merge Request", "Merge a merge request."),
        entry("gl.create_merge_request", "Create Merge Request",
              "Create a merge request (MR) and ask for a review.", reviewers="Who reviews the MR"),
        entry("gl.list_pipelines", "List Pipelines", "List the pipelines of a project."),
        entry("gh.list_pull_requests", "List Pull Requests", "List the pull requests of a repo."),
        entry("gl.get_issue", "Get Issue", "Get an issue of a project."),
    ]  # fmt: skip
    index = SearchIndex(catalog)
    assert ids(index.search("merge request", 2)) == [
        "gl.merge_merge_request",
        "gl.create_merge_request",
    ]
    create = next(hit for hit in index.explain("merge request") if hit.tool_id.startswith("gl.c"))
    parts = {part.term: part for part in create.terms}
    assert {parts["mr"].synonym_of, parts["review"].synonym_of} == {"merg"}
    # A synonym is weighed with its word's idf: it stands in for that word.
    assert parts["mr"].idf == parts["review"].idf == parts["merg"].idf


def test_a_word_no_tool_uses_is_weighed_by_the_tools_its_synonyms_find() -> None:
    (hit,) = SearchIndex(CATALOG).explain("erase", 1)
    assert hit.tool_id == "gitlab.delete_branch"
    (part,) = hit.terms
    assert (part.term, part.synonym_of) == ("delet", "eras")
    # One of the six tools has "delete": the idf of a word that one tool in six uses.
    assert part.idf == pytest.approx(math.log(1 + 5.5 / 1.5) ** IDF_EXPONENT)
    # "erase" stands for "delete", one of the two words of delete_branch's name.
    assert hit.name_coverage == 0.5
    assert hit.score == pytest.approx(part.contribution * (1 + NAME_COVERAGE * 0.5))


def test_of_tools_the_same_words_match_the_one_the_request_names_comes_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # All three match "create", "Jira" and "issue"; the one to get create fields also matches
    # "project" and describes "create" and "issue" in more of its fields. Only one tool's name
    # is spelled out by the request.
    catalog = [
        entry("jira.jira_create_issue", "Jira Create Issue",
              "Create a new Jira issue, with an optional epic link or parent.",
              project_key="The project's key", summary="One line",
              issue_type="Bug, Task or Story", assignee="Who works on it",
              components="Component names"),
        entry("jira.jira_batch_create_issues", "Jira Batch Create Issues",
              "Create several Jira issues in one batch.", issues="The issues"),
        entry("jira.jira_get_create_fields", "Jira Get Create Fields",
              "Get the fields needed to create an issue of a type in a project.",
              project_key="The project's key", issue_type="The issue type"),
        entry("calendar.list_events", "List Events", "List upcoming events on a calendar."),
        entry("files.read_file", "Read File", "Read the complete contents of a file."),
    ]  # fmt: skip
    query = "create a Jira issue in project PROJ"
    hits = SearchIndex(catalog).explain(query, 3)
    assert ids(hits) == [
        "jira.jira_create_issue",
        "jira.jira_get_create_fields",
        "jira.jira_batch_create_issues",
    ]
    assert [hit.name_coverage for hit in hits] == [1.0, 0.5, 0.75]
    monkeypatch.setattr(index_module, "NAME_COVERAGE", 0.0)
    assert ids(SearchIndex(catalog).search(query, 1)) == ["jira.jira_get_create_fields"]


@pytest.mark.parametrize("coverage", [NAME_COVERAGE, 3.0])
@pytest.mark.parametrize("size", [60, 3000])
def test_raised_rankings_equal_the_reference_on_large_catalogs(
    size: int, coverage: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Many tools share a name word with the query: the best RAISED_DEPTH are reordered by
    # their raised scores (with a large raise, often), and the rest follow in BM25F order.
    monkeypatch.setattr(index_module, "NAME_COVERAGE", coverage)
    rng = random.Random(size)
    vocabulary = [f"w{rank}" for rank in range(300)]
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]
    catalog: Catalog = []
    for number in range(size):
        name = "_".join(rng.choices(vocabulary[:40], k=rng.randint(1, 3))) + f"_n{number}"
        text = " ".join(rng.choices(vocabulary, weights, k=rng.randint(0, 25)))
        # Some IDs have two dots: only the part after the last one is the tool's own name.
        tool_id = f"set{number % 9}.{name}" if number % 3 else f"org.set{number % 9}.{name}"
        catalog.append((tool_id, search_document(tool_id, "", text)))
    index = SearchIndex([SearchEntry(tool_id, document) for tool_id, document in catalog])
    for _ in range(60):
        query = " ".join(f"w{int(rng.paretovariate(0.7))}" for _ in range(rng.randint(1, 5)))
        limit = rng.choice([1, 3, 5, 10])
        assert_ranked_as(index, query, limit, reference(catalog, index, query, len(catalog)))


def test_exact_names_come_first_whatever_the_words() -> None:
    entries = [
        *CATALOG,
        SearchEntry("misc.zz", search_document("misc.zz", "", ""), aliases=("misc_zz",)),
    ]
    index = SearchIndex(entries)
    assert ids(index.search(" MISC_ZZ ")) == ["misc.zz"]
    assert ids(index.search("files.read_file"))[0] == "files.read_file"
    # The named tool keeps the raise its name's words earn it, as any other hit would.
    named = index.explain("files.read_file")[0]
    assert named.exact_name and named.name_coverage == 1.0
    contributions = sum(part.contribution for part in named.terms)
    assert named.score == pytest.approx(contributions * (1 + NAME_COVERAGE))
    assert index.search("files.read_file")[0].score == named.score


def test_documents_of_another_version_are_refused_with_what_to_do() -> None:
    old = SearchEntry("a.x", SearchDocument.from_text("a.x X old tool"))
    expected = f"version 1, and this runtime ranks version {SEARCH_VERSION}"
    with pytest.raises(ValueError, match=expected) as caught:
        SearchIndex([old])
    assert "regenerate the package" in str(caught.value)
    assert ids(SearchIndex([old], ranking="classic").search("old")) == ["a.x"]


def test_classic_needs_text_or_classic_documents() -> None:
    with pytest.raises(ValueError, match="has none"):
        SearchIndex([SearchEntry("a.x", search_document("a.x", "X", "x"))], ranking="classic")
    with pytest.raises(ValueError, match="unknown tool search ranking 'bm42'"):
        SearchIndex(CATALOG, ranking="bm42")  # type: ignore[arg-type]
