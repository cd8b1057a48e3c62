"""BM25F ranking of deferred tools for client-side tool search.

An index is built for every planning activity, over the deferred tools that activity may
use, from word counts the generator already made; only queries are analysed at run time.
Building therefore has to be cheap, and most of the work is put off until a query needs it.

Two rankings. ``fields`` (the default): BM25F over the fields of version-2 documents (tool ID,
title, description, argument names, argument text), each with its own weight and length
normalisation (:mod:`agentgen.runtime.search.analysis`), queries analysed the same way and
widened with a few synonyms, idf raised to :data:`IDF_EXPONENT` so that one rare word does
not decide a ranking alone, and the best tools reordered by how much of their names the query
spells out (:data:`NAME_COVERAGE`). ``classic``: the spec's plain Lucene BM25 (k1 = 1.2, b = 0.75,
idf = ln(1 + (N - n + 0.5) / (n + 0.5))) over "<tool ID> <title> <description>", which matches
the Go original and other BM25 engines; its counts are made from each entry's ``text`` when the
index is built. In both, each distinct query word counts once, a query is ranked by its
first :data:`~agentgen.runtime.search.analysis.MAX_QUERY_WORDS` distinct words, and a tool the
query names exactly comes first (peers' searches miss it): its ID or an alias, in any case
unless another tool's name differs from it only in case (``records.getUser`` and
``records.GetUser`` are two tools; ``records.getuser`` then names neither). Names are compared
in Unicode NFKC, as every word is read: a name typed in fullwidth letters
(``ｒｅｃｏｒｄｓ．ｓｅａｒｃｈ``, as East Asian input methods write it) still names the tool.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Literal

from agentgen.runtime.search.analysis import (
    FIELD_B,
    FIELD_WEIGHTS,
    K1,
    SEARCH_VERSION,
    SYNONYM_WEIGHT,
    first_distinct,
    identifier_words,
    normalized,
    query_words,
    synonyms,
)
from agentgen.runtime.search.document import CLASSIC_VERSION, SearchDocument, tokenize

__all__ = [
    "DEFAULT_LIMIT",
    "DEFAULT_RANKING",
    "IDF_EXPONENT",
    "K1",
    "NAME_COVERAGE",
    "RAISED_DEPTH",
    "RANKINGS",
    "B",
    "ExplainedHit",
    "FieldContribution",
    "Ranking",
    "SearchEntry",
    "SearchHit",
    "SearchIndex",
    "TermContribution",
    "reads_documents",
]

#: The classic ranking's length normalisation.
B = 0.75
#: The ``fields`` ranking raises each word's idf to this power. A word few tools use otherwise
#: outweighs everything else a tool matches: a value named in a request ("now", "template",
#: "open") that one tool happens to list among its argument values beat the tool whose name and
#: description match the request's other words. Tuned on the tuning half of the eval set (every
#: value from 0.65 to 0.9 did better than 1); ranking only, so documents and their version are
#: unchanged. ``classic`` keeps the spec's plain idf.
IDF_EXPONENT = 0.8
#: The ``fields`` ranking multiplies the scores of its :data:`RAISED_DEPTH` best tools by
#: ``1 + NAME_COVERAGE * share``, where share is the part of the words of the tool's own name
#: (its ID after the last dot) that the query or its synonyms use, and reorders them. Of tools
#: the same words match, the one whose name the request spells out is what was asked for:
#: "create a Jira issue" means ``jira_create_issue``, not ``jira_get_create_fields``, though
#: both match its words and the longer one describes them more often. Tuned on the tuning half
#: of the eval set (0.1 to 0.2 did equally well: recall@5 +0.007 there; +0.010 on the held-out
#: half); ranking only, so documents and their version are unchanged.
NAME_COVERAGE = 0.15
#: How many of the best tools by BM25F the name coverage reorders. Tools further down keep
#: their BM25F score and order, so asking for more hits never changes the first ones, and the
#: pruned search looks for RAISED_DEPTH tools at least (about 10 µs more per query). On the
#: eval set, depths from 7 to 1,000 gave the same recall@1, recall@5 and MRR.
RAISED_DEPTH = 8
DEFAULT_LIMIT = 5

Ranking = Literal["fields", "classic"]
RANKINGS: tuple[Ranking, ...] = ("fields", "classic")
DEFAULT_RANKING: Ranking = "fields"


def reads_documents(client: object) -> bool:
    """Whether a model client ranks deferred tools by their generated search documents, which
    must then be of this runtime's :data:`~agentgen.runtime.search.analysis.SEARCH_VERSION`.

    A client says how it ranks by its ``search_ranking`` attribute: ``"fields"`` reads the
    documents; ``"classic"`` counts each tool's text itself when its index is built, so it
    ranks a package generated with another search version as well; ``None`` ranks nothing
    here (the provider searches, as Claude's hosted search does, or the client cannot search).
    A client that does not say is taken to rank as the default does, which reads them."""
    return getattr(client, "search_ranking", DEFAULT_RANKING) == "fields"


_K1_PLUS_1 = K1 + 1.0
# Scanning every document for one word costs a tenth to a twentieth of inverting them all
# (measured at 1,000 and 10,000 tools), so an index scans for its first few words, then
# inverts: a few searches stay cheap, and many cost at most about 1.6 inversions.
_SCANS_BEFORE_INVERTING = 6
# Pruning compares sums taken in different orders; this keeps it on the safe side of rounding.
_LOWER = 1.0 - 1e-12


@dataclass(frozen=True)
class SearchEntry:
    """A deferred tool as search sees it.

    `aliases` are other names a model may use for the tool, such as the provider-visible name
    `records_search` of `records.search`; a query naming one exactly finds the tool first.
    """

    tool_id: str
    document: SearchDocument
    aliases: tuple[str, ...] = ()
    #: "<tool ID> <title> <description>": what the ``classic`` ranking counts words of.
    text: str | None = None


@dataclass(frozen=True)
class SearchHit:
    """A tool found by a search, with its BM25 score (0.0 if only its name matched)."""

    tool_id: str
    score: float


@dataclass(frozen=True)
class FieldContribution:
    """How much of a word's contribution comes from one field of the tool's document."""

    field: str
    count: int
    contribution: float


@dataclass(frozen=True)
class TermContribution:
    """One query word's share of a tool's score, for showing why a tool ranks where it does.

    ``tf`` is how often the word occurs in the tool (all fields; ``fields`` splits it and the
    contribution by field); ``weight`` is 1 for the query's own words and less for synonyms
    (``synonym_of`` names the query word they stand in for). A synonym adds to its word's
    frequency and is weighed with its word's ``idf``; the word and its synonyms share the
    contribution by their part of that frequency."""

    term: str
    idf: float
    tf: int
    contribution: float
    weight: float = 1.0
    synonym_of: str | None = None
    fields: tuple[FieldContribution, ...] = ()


@dataclass(frozen=True)
class ExplainedHit:
    """A hit with the per-word contributions that add up to its score, in query-word order."""

    tool_id: str
    score: float
    exact_name: bool
    terms: tuple[TermContribution, ...] = ()
    #: The share of the words of the tool's name the query uses, when the ranking raised the
    #: tool's score by it (``fields``, the best RAISED_DEPTH tools; otherwise 0.0): the terms'
    #: contributions add up to ``score / (1 + NAME_COVERAGE * name_coverage)``.
    name_coverage: float = 0.0


class _Term:
    """A word's BM25 weight in each tool that uses it, kept for the rest of the activity.

    `top` bounds what the word can add to any tool's score, which is what pruning needs;
    `best` holds the tools it weighs most in, whose scores give a cheap first threshold.
    """

    __slots__ = ("best", "idf", "top", "weights")

    def __init__(self, idf: float, weights: dict[int, float]) -> None:
        self.idf = idf
        self.weights = weights
        self.top = max(weights.values())
        self.best: list[int] = []


class SearchIndex:
    """BM25F (or classic BM25) over a fixed set of tools.

    Building only records field lengths and names. A word's postings are found by scanning the
    documents the first time a query uses it, then kept: an activity asks a handful of
    queries, and scanning for their few words costs far less than inverting every document.
    If an activity asks about many words, the documents are inverted once after all.
    Documents are not validated here: they are generated, or were validated when read.

    Queries are answered word by word with max-score pruning, so that common words do not
    cost a pass over most tools: words that can add most come first, and once the k-th best
    score so far exceeds what the remaining words could give a tool not yet met, only tools
    already met are followed. Ties are broken by tool ID so that results are reproducible.
    """

    def __init__(self, entries: Sequence[SearchEntry], ranking: Ranking = DEFAULT_RANKING) -> None:
        if ranking not in RANKINGS:
            raise ValueError(
                f"unknown tool search ranking {ranking!r}; choose one of {', '.join(RANKINGS)}"
            )
        self.ranking: Ranking = ranking
        self._ids = [entry.tool_id for entry in entries]
        aliases = [entry.aliases for entry in entries]
        ascii_names = all(map(str.isascii, self._ids)) and all(
            map(str.isascii, chain.from_iterable(aliases))
        )
        self._names, self._exact = _names(self._ids, entries, ascii_names)
        # Every name, as given and folded (ASCII names fold to names of their own length), for
        # the longest of them: measured only when a long query asks (see _named).
        self._every_name = self._names if ascii_names else (self._names, self._ids, *aliases)
        self._longest: int | None = None
        documents = _documents(entries, ranking)
        self._fields = documents[0].fields if documents else ()
        weights, bs = (FIELD_WEIGHTS, FIELD_B) if ranking == "fields" else ((1.0,), (B,))
        self._doc_terms: list[Mapping[str, tuple[int, ...]]] = [d.terms for d in documents]
        count = len(documents)
        self._count = count
        width = len(weights)
        averages = [sum(d.lengths[f] for d in documents) / count if count else 0.0
                    for f in range(width)]  # fmt: skip
        # Per tool and field, what one occurrence of a word adds to its weighted frequency:
        # the field's weight over its length normalisation (BM25F).
        self._factors: list[tuple[float, ...]] = [
            tuple(
                weights[f] / (1.0 - bs[f] + bs[f] * d.lengths[f] / averages[f])
                if averages[f]
                else weights[f]
                for f in range(width)
            )
            for d in documents
        ]
        self._idf_exponent = IDF_EXPONENT if ranking == "fields" else 1.0
        self._coverage = NAME_COVERAGE if ranking == "fields" else 0.0
        # Each tool's name words, analysed when a query first ranks the tool near the top.
        self._name_words: dict[int, frozenset[str]] = {}
        self._terms: dict[tuple[tuple[str, float], ...], _Term | None] = {}
        self._scans = 0
        self._postings: dict[str, list[int]] | None = None

    def __len__(self) -> int:
        return self._count

    def search(self, query: str, limit: int = DEFAULT_LIMIT) -> list[SearchHit]:
        """Return up to `limit` tools, best first; a tool named exactly by the query leads."""
        ids = self._ids
        return [SearchHit(ids[doc], score) for doc, score, _ in self._rank(query, limit)[1]]

    def explain(self, query: str, limit: int = DEFAULT_LIMIT) -> list[ExplainedHit]:
        """Return the hits of `search` with the contribution of each query word to each score."""
        words, ranked, exact = self._rank(query, limit)
        return [
            self._explained(doc, words, score, share, doc == exact) for doc, score, share in ranked
        ]

    def query_terms(self, query: str) -> list[tuple[str, float, str | None]]:
        """The words a query is ranked by: (word, weight, the query word a synonym stands in
        for), the query's own words first, in query order, at most :data:`MAX_QUERY_WORDS`
        of them (the first)."""
        if self.ranking == "classic":
            return [(word, 1.0, None) for word in first_distinct(tokenize(query))]
        own = query_words(query)
        found: list[tuple[str, float, str | None]] = [(word, 1.0, None) for word in own]
        taken = set(own)
        for word in own:
            for synonym in synonyms(word):
                if synonym not in taken:
                    taken.add(synonym)
                    found.append((synonym, SYNONYM_WEIGHT, word))
        return found

    def _rank(
        self, query: str, limit: int
    ) -> tuple[list[_Word], list[tuple[int, float, float]], int | None]:
        """The query's words; its best tools, as (tool, the score it is ranked by, the name
        coverage that score was raised by: 0.0 when it was not); the tool it names exactly."""
        if limit < 0:
            raise ValueError(f"tool search limit must not be negative, got {limit}")
        if limit == 0:
            return [], [], None
        exact = self._named(query.strip())
        words = self._words(query)
        ranked: list[tuple[int, float, float]]
        if self._coverage:
            top = self._top(words, max(limit, RAISED_DEPTH))
            terms = frozenset(member for word in words for member, _ in word.members)
            ids = self._ids
            head: list[tuple[float, str, int, float]] = []
            for doc, score in top[:RAISED_DEPTH]:
                share = self._name_share(doc, terms)
                head.append((-score * (1.0 + self._coverage * share), ids[doc], doc, share))
            head.sort()
            ranked = [(doc, -score, share) for score, _, doc, share in head]
            ranked += [(doc, score, 0.0) for doc, score in top[RAISED_DEPTH:limit]]
        else:
            ranked = [(doc, score, 0.0) for doc, score in self._top(words, limit)]
        if exact is not None:
            named = next((hit for hit in ranked if hit[0] == exact), None)
            rest = [hit for hit in ranked if hit[0] != exact]
            ranked = [named or (exact, self._score(exact, words), 0.0), *rest[: limit - 1]]
        return words, ranked[:limit], exact

    def _named(self, name: str) -> int | None:
        """The tool a query names: the one with that ID or alias, else the one whose ID or
        alias it spells in other case; none when that case-folded name is several tools'. The
        query is read in NFKC (:func:`_folded`), as its words are: a fullwidth name is the name.

        NFKC composes at most four code points into one (the longest canonical decomposition),
        so a query over four times the longest name names none, and is not read in NFKC here: a
        model's query may be its whole output, 128 KB of characters NFKC expands 18-fold."""
        if len(name) > _SHORT_QUERY and len(name) > _MOST_COMPOSED * self._longest_name():
            return None
        if self._exact is not None:
            doc = self._exact.get(name)
            if doc is None:
                doc = self._exact.get(normalized(name))
            if doc is not None:
                return doc
        doc = self._names.get(_folded(name))
        return None if doc is None or doc == _SHARED else doc

    def _longest_name(self) -> int:
        if self._longest is None:
            every = self._every_name
            names = chain.from_iterable(every) if isinstance(every, tuple) else every
            self._longest = max(map(len, names), default=0)
        return self._longest

    def _name_share(self, doc: int, terms: frozenset[str]) -> float:
        """The share of the words of a tool's own name that are among a query's terms."""
        name = self._name_words.get(doc)
        if name is None:
            own = self._ids[doc].rsplit(".", 1)[-1]
            name = self._name_words[doc] = frozenset(identifier_words(own))
        return len(name & terms) / len(name) if name else 0.0

    def _words(self, query: str) -> list[_Word]:
        """The query's known words, each with the synonyms that stand in for it, sorted by
        word, which fixes the summation order."""
        groups: dict[str, list[tuple[str, float]]] = {}
        for word, weight, origin in self.query_terms(query):
            groups.setdefault(word if origin is None else origin, []).append((word, weight))
        words = []
        for word in sorted(groups):
            members = tuple(groups[word])
            if members in self._terms:
                term = self._terms[members]
            else:
                term = self._terms[members] = self._term(members)
            if term is not None:
                words.append(_Word(word, members, term))
        return words

    def _term(self, members: tuple[tuple[str, float], ...]) -> _Term | None:
        """Weigh a query word and its synonyms as one word (as Lucene's synonym query does):
        a tool's frequency of it is the word's own plus a fraction of its synonyms', and its
        idf is the word's own, so synonyms widen what a word finds without ever counting more
        than the word itself. A word no tool uses takes the idf of the tools its synonyms
        find."""
        doc_terms = self._doc_terms
        postings = self._postings
        found: list[list[int]] = []
        for word, _ in members:
            if postings is None and self._scans >= _SCANS_BEFORE_INVERTING:
                postings = self._postings = _invert(doc_terms)
            if postings is not None:
                found.append(postings.get(word, []))
            else:
                self._scans += 1
                found.append([doc for doc, counts in enumerate(doc_terms) if word in counts])
        factors = self._factors
        # Each tool's frequency, added up in the order of the members as _group_frequency does.
        frequencies: dict[int, float] = {}
        get = frequencies.get
        for (word, weight), docs in zip(members, found, strict=True):
            for doc in docs:
                frequency = _frequency(doc_terms[doc][word], factors[doc])
                frequencies[doc] = get(doc, 0.0) + weight * frequency
        if not frequencies:
            return None
        df = len(found[0]) or len(frequencies)
        idf = math.log(1.0 + (self._count - df + 0.5) / (df + 0.5)) ** self._idf_exponent
        weights = {
            doc: idf * tf * _K1_PLUS_1 / (tf + K1) for doc, tf in sorted(frequencies.items())
        }
        return _Term(idf, weights)

    def _score(self, doc: int, words: list[_Word]) -> float:
        # Scores that are reported are added up here, in sorted word order, so that equal
        # tools get bit-for-bit equal scores whatever order pruning visited them in.
        score = 0.0
        for word in words:
            found = word.term.weights.get(doc)
            if found is not None:
                score += found
        return score

    def _top(self, words: list[_Word], k: int) -> list[tuple[int, float]]:
        """Return the k best documents with their scores, by (score desc, tool ID asc); all
        have score > 0."""
        if not words:
            return []
        ordered = sorted(words, key=lambda word: -word.top)
        # remaining[i]: the most that words i, i+1, ... can add to any one tool.
        remaining = [0.0] * (len(ordered) + 1)
        for i in range(len(ordered) - 1, -1, -1):
            remaining[i] = remaining[i + 1] + ordered[i].top
        # Partial scores of the tools met so far, summed in this loop's word order.
        acc: dict[int, float] = {}
        following = False
        for i, word in enumerate(ordered):
            weights = word.term.weights
            if following:
                if len(weights) < len(acc):
                    for doc, weight in weights.items():
                        if doc in acc:
                            acc[doc] += weight
                else:
                    weight_of = weights.get
                    for doc, score in acc.items():
                        found = weight_of(doc)
                        if found is not None:
                            acc[doc] = score + found
            elif acc:
                get = acc.get
                for doc, weight in weights.items():
                    acc[doc] = get(doc, 0.0) + weight
            else:
                acc = dict(weights)
            if len(acc) <= k:
                continue
            if len(acc) <= 8 * k:
                pool = list(acc.values())
            else:
                seeds = {doc for seen in ordered[: i + 1] for doc in self._best(seen.term, k)}
                pool = [score for score in map(acc.get, seeds) if score is not None]
            if len(pool) < k:
                continue
            # Partial scores only grow, so the k-th best of any k of them bounds the final k-th
            # best from below; the margin absorbs rounding from adding in another order.
            threshold = heapq.nlargest(k, pool)[-1] * _LOWER
            if not following and remaining[i + 1] < threshold:
                following = True
            if following:
                floor = threshold - remaining[i + 1]
                acc = {doc: score for doc, score in acc.items() if score >= floor}
        # Rank the survivors by scores summed in sorted word order, as reported.
        if len(acc) > k:
            least = heapq.nlargest(k, acc.values())[-1] * _LOWER
            candidates = [doc for doc, score in acc.items() if score >= least]
        else:
            candidates = list(acc)
        ids = self._ids
        ranked = sorted((-self._score(doc, words), ids[doc], doc) for doc in candidates)
        return [(doc, -score) for score, _, doc in ranked[:k]]

    def _best(self, term: _Term, k: int) -> list[int]:
        # A term's best tools are found once; a few spare ones serve later, larger limits.
        weights = term.weights
        if len(term.best) < min(k, len(weights)):
            term.best = heapq.nlargest(max(k, 8), weights, key=weights.__getitem__)
        return term.best[:k]

    def _explained(
        self, doc: int, words: list[_Word], score: float, coverage: float, exact: bool
    ) -> ExplainedHit:
        """`score`: what the tool was ranked by, reported as it is; `coverage`: the name
        coverage it was raised by. Explained contributions add up to the score before the
        raise, give or take rounding (synonyms split their word's share)."""
        tool_id = self._ids[doc]
        counts = self._doc_terms[doc]
        factors = self._factors[doc]
        parts = []
        for word in words:
            contribution = word.term.weights.get(doc)
            if contribution is None:
                continue
            tf = _group_frequency(counts, word.members, factors)
            # A word and its synonyms share the contribution by their part of the frequency.
            for member, weight in word.members:
                found = counts.get(member)
                if found is None:
                    continue
                frequency = _frequency(found, factors)
                portion = contribution * (weight * frequency / tf)
                fields = tuple(
                    FieldContribution(name, count, portion * count * factor / frequency)
                    for name, count, factor in zip(self._fields, found, factors, strict=True)
                    if count
                )
                origin = None if member == word.word else word.word
                parts.append(
                    TermContribution(
                        member, word.term.idf, sum(found), portion, weight, origin, fields
                    )
                )
        return ExplainedHit(tool_id, score, exact, tuple(parts), coverage)


class _Word:
    """A query word with the synonyms that stand in for it ((word, weight) pairs, the word
    itself first) and their postings as one."""

    __slots__ = ("members", "term", "top", "word")

    def __init__(self, word: str, members: tuple[tuple[str, float], ...], term: _Term) -> None:
        self.word = word
        self.members = members
        self.term = term
        self.top = term.top

    def __lt__(self, other: _Word) -> bool:
        return self.word < other.word


def _frequency(counts: tuple[int, ...], factors: tuple[float, ...]) -> float:
    """A word's weighted, length-normalised frequency in a tool (BM25F's pseudo term count)."""
    if len(counts) == 1:
        return counts[0] * factors[0]
    tf = 0.0
    for count, factor in zip(counts, factors, strict=True):
        if count:
            tf += count * factor
    return tf


def _group_frequency(
    counts: Mapping[str, tuple[int, ...]],
    members: tuple[tuple[str, float], ...],
    factors: tuple[float, ...],
) -> float:
    """A query word's frequency in a tool with its synonyms' at their weight (0.0: none)."""
    tf = 0.0
    for word, weight in members:
        found = counts.get(word)
        if found is not None:
            tf += weight * _frequency(found, factors)
    return tf


def _documents(entries: Sequence[SearchEntry], ranking: Ranking) -> list[SearchDocument]:
    if ranking == "classic":
        documents = []
        for entry in entries:
            if entry.document.version == CLASSIC_VERSION:
                documents.append(entry.document)
            elif entry.text is not None:
                documents.append(SearchDocument.from_text(entry.text))
            else:
                raise ValueError(
                    f"the classic tool search ranking counts words of each tool's text; tool "
                    f"{entry.tool_id!r} has none (SearchEntry(text=...))"
                )
        return documents
    for entry in entries:
        if entry.document.version != SEARCH_VERSION:
            raise ValueError(
                f"tool {entry.tool_id!r} has a search document of version "
                f"{entry.document.version}, and this runtime ranks version {SEARCH_VERSION}: "
                "regenerate the package that defines it (agentgen gen), or rank with "
                "ranking='classic'"
            )
    return [entry.document for entry in entries]


def _invert(doc_terms: Sequence[Mapping[str, tuple[int, ...]]]) -> dict[str, list[int]]:
    """List, for every word, the documents that use it, in document order."""
    postings: dict[str, list[int]] = {}
    for doc, counts in enumerate(doc_terms):
        for word in counts:
            docs = postings.get(word)
            if docs is None:
                postings[word] = [doc]
            else:
                docs.append(doc)
    return postings


def _names(
    ids: Sequence[str], entries: Sequence[SearchEntry], ascii_names: bool
) -> tuple[dict[str, int], dict[str, int] | None]:
    """Map each tool's ID and aliases, case-folded, to the tool (:data:`_SHARED` where the
    folded name is several tools'), and, when some are, also the exact names; rejecting a
    name that is two tools' exactly.

    Tool IDs are case-sensitive everywhere else (providers, registries): ``records.getUser``
    and ``records.GetUser`` are two tools, and a query naming one of them exactly still finds
    it first. The common case (no two names fold alike) is checked with whole-collection
    operations, because this runs for every planning activity; ASCII names (every generated or
    registry tool ID is) are folded without a call per name.
    """
    fold = str.casefold if ascii_names else _folded
    names = dict(zip(map(fold, ids), range(len(ids)), strict=True))
    if len(names) == len(ids) and "" not in names:
        for doc, entry in enumerate(entries):
            for alias in entry.aliases:
                if names.setdefault(fold(alias), doc) != doc or not alias:
                    return _shared_names(entries)
        return names, None
    return _shared_names(entries)


#: The most code points NFKC composes into one character (U+1FAF's decomposition has four).
_MOST_COMPOSED = 4
#: Queries up to this length are compared with names without measuring the longest name.
_SHORT_QUERY = 1024

#: The tool of a case-folded name that several tools' IDs or aliases spell.
_SHARED = -1


def _shared_names(entries: Sequence[SearchEntry]) -> tuple[dict[str, int], dict[str, int]]:
    """The names of :func:`_names` when some fold alike, found tool by tool, so an error names
    the tools involved."""
    exact: dict[str, int] = {}
    folded: dict[str, int] = {}
    seen_ids: set[str] = set()
    for doc, entry in enumerate(entries):
        if not entry.tool_id:
            raise ValueError("tool search entry has an empty tool ID")
        if entry.tool_id in seen_ids:
            raise ValueError(f"tool search index lists tool {entry.tool_id!r} twice")
        seen_ids.add(entry.tool_id)
        for name in (entry.tool_id, *entry.aliases):
            if not name:
                raise ValueError(f"tool {entry.tool_id!r} has an empty search alias")
            other = exact.setdefault(name, doc)
            if other != doc:
                raise ValueError(
                    f"tool search name {name!r} of {entry.tool_id!r} also names "
                    f"{entries[other].tool_id!r}"
                )
            key = _folded(name)
            if folded.setdefault(key, doc) != doc:
                folded[key] = _SHARED
    return folded, exact


def _folded(name: str) -> str:
    """A tool name or query as names are compared in any case: in Unicode NFKC, the form every
    word is read in (fullwidth "ｒｅｃｏｒｄｓ．ｓｅａｒｃｈ" is "records.search"), then casefolded.
    Without NFKC a query typed in fullwidth letters matched the tool's words but not its name,
    and lost the first place an exact name is promised."""
    return normalized(name).casefold()
