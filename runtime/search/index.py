"""BM25 ranking of deferred tools for client-side tool search.

An index is built for every planning activity, over the deferred tools that activity may
use, from word counts the generator already made; only queries are tokenised at run time.
Building therefore has to be cheap, and most of the work is put off until a query needs it.

Scores are Lucene's BM25 (k1 = 1.2, b = 0.75, idf = ln(1 + (N - n + 0.5) / (n + 0.5))), with
each distinct query word counted once, so that rankings match the Go original and other BM25
engines. Peers' searches miss a tool the model names exactly; here such a tool comes first.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NoReturn

from agentgen.runtime.search.document import SearchDocument, tokenize

__all__ = [
    "DEFAULT_LIMIT",
    "K1",
    "B",
    "ExplainedHit",
    "SearchEntry",
    "SearchHit",
    "SearchIndex",
    "TermContribution",
]

K1 = 1.2
B = 0.75
DEFAULT_LIMIT = 5

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


@dataclass(frozen=True)
class SearchHit:
    """A tool found by a search, with its BM25 score (0.0 if only its name matched)."""

    tool_id: str
    score: float


@dataclass(frozen=True)
class TermContribution:
    """One query word's share of a tool's score, for showing why a tool ranks where it does."""

    term: str
    idf: float
    tf: int
    contribution: float


@dataclass(frozen=True)
class ExplainedHit:
    """A hit with the per-word contributions that add up to its score, in query-word order."""

    tool_id: str
    score: float
    exact_name: bool
    terms: tuple[TermContribution, ...] = ()


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
    """BM25 over a fixed set of tools.

    Building only records lengths and names. A word's postings are found by scanning the
    documents the first time a query uses it, then kept: an activity asks a handful of
    queries, and scanning for their few words costs far less than inverting every document.
    If an activity asks about many words, the documents are inverted once after all.
    Documents are not validated here: they are generated, or were validated when read.

    Queries are answered word by word with max-score pruning, so that common words do not
    cost a pass over most tools: words that can add most come first, and once the k-th best
    score so far exceeds what the remaining words could give a tool not yet met, only tools
    already met are followed. Ties are broken by tool ID so that results are reproducible.
    """

    def __init__(self, entries: Sequence[SearchEntry]) -> None:
        self._ids = [entry.tool_id for entry in entries]
        self._names = _names(self._ids, entries)
        self._doc_terms: list[Mapping[str, int]] = [entry.document.terms for entry in entries]
        lengths = [entry.document.length for entry in entries]
        count = len(lengths)
        total = sum(lengths)
        self._count = count
        avgdl = total / count if count else 0.0
        # With no words at all there is nothing to score; avoid dividing by zero.
        self._norms = (
            [K1 * (1.0 - B + B * length / avgdl) for length in lengths] if total else [0.0] * count
        )
        self._terms: dict[str, _Term | None] = {}
        self._scans = 0
        self._postings: dict[str, list[int]] | None = None

    def __len__(self) -> int:
        return self._count

    def search(self, query: str, limit: int = DEFAULT_LIMIT) -> list[SearchHit]:
        """Return up to `limit` tools, best first; a tool named exactly by the query leads."""
        return [SearchHit(hit.tool_id, hit.score) for hit in self._rank(query, limit, False)]

    def explain(self, query: str, limit: int = DEFAULT_LIMIT) -> list[ExplainedHit]:
        """Return the hits of `search` with the contribution of each query word to each score."""
        return self._rank(query, limit, True)

    def _rank(self, query: str, limit: int, explain: bool) -> list[ExplainedHit]:
        if limit < 0:
            raise ValueError(f"tool search limit must not be negative, got {limit}")
        if limit == 0:
            return []
        exact = self._names.get(query.strip().casefold())
        words = self._query_terms(query)
        top = self._top(words, limit)
        if exact is not None:
            rest = [doc for doc in top if doc != exact]
            top = [exact, *rest[: limit - 1]]
        return [self._hit(doc, words, explain, doc == exact) for doc in top]

    def _query_terms(self, query: str) -> list[tuple[str, _Term]]:
        """Return the distinct known query words, sorted, which fixes the summation order."""
        words = []
        for word in sorted(set(tokenize(query))):
            if word in self._terms:
                term = self._terms[word]
            else:
                term = self._terms[word] = self._term(word)
            if term is not None:
                words.append((word, term))
        return words

    def _term(self, word: str) -> _Term | None:
        doc_terms = self._doc_terms
        postings = self._postings
        if postings is None and self._scans >= _SCANS_BEFORE_INVERTING:
            postings = self._postings = _invert(doc_terms)
        if postings is not None:
            docs = postings.get(word, [])
        else:
            self._scans += 1
            docs = [doc for doc, counts in enumerate(doc_terms) if word in counts]
        if not docs:
            return None
        df = len(docs)
        idf = math.log(1.0 + (self._count - df + 0.5) / (df + 0.5))
        norms = self._norms
        weights = {
            doc: idf * tf * _K1_PLUS_1 / (tf + norms[doc])
            for doc in docs
            for tf in (doc_terms[doc][word],)
        }
        return _Term(idf, weights)

    def _score(self, doc: int, words: list[tuple[str, _Term]]) -> float:
        # Scores that are reported are added up here, in sorted word order, so that equal
        # tools get bit-for-bit equal scores whatever order pruning visited them in.
        counts = self._doc_terms[doc]
        norm = self._norms[doc]
        score = 0.0
        for word, term in words:
            tf = counts.get(word)
            if tf is not None:
                score += term.idf * tf * _K1_PLUS_1 / (tf + norm)
        return score

    def _top(self, words: list[tuple[str, _Term]], k: int) -> list[int]:
        """Return the k best documents by (score desc, tool ID asc); all have score > 0."""
        if not words:
            return []
        terms = sorted((term for _, term in words), key=lambda term: -term.top)
        # remaining[i]: the most that words i, i+1, ... can add to any one tool.
        remaining = [0.0] * (len(terms) + 1)
        for i in range(len(terms) - 1, -1, -1):
            remaining[i] = remaining[i + 1] + terms[i].top
        # Partial scores of the tools met so far, summed in this loop's word order.
        acc: dict[int, float] = {}
        following = False
        for i, term in enumerate(terms):
            weights = term.weights
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
                acc = weights.copy()
            if len(acc) <= k:
                continue
            if len(acc) <= 8 * k:
                pool = list(acc.values())
            else:
                seeds = {doc for seen in terms[: i + 1] for doc in self._best(seen, k)}
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
        return [doc for _, _, doc in ranked[:k]]

    def _best(self, term: _Term, k: int) -> list[int]:
        # A term's best tools are found once; a few spare ones serve later, larger limits.
        weights = term.weights
        if len(term.best) < min(k, len(weights)):
            term.best = heapq.nlargest(max(k, 8), weights, key=weights.__getitem__)
        return term.best[:k]

    def _hit(
        self, doc: int, words: list[tuple[str, _Term]], explain: bool, exact: bool
    ) -> ExplainedHit:
        tool_id = self._ids[doc]
        if not explain:
            return ExplainedHit(tool_id, self._score(doc, words), exact)
        counts = self._doc_terms[doc]
        norm = self._norms[doc]
        parts = []
        for word, term in words:
            tf = counts.get(word)
            if tf is not None:
                contribution = term.idf * tf * _K1_PLUS_1 / (tf + norm)
                parts.append(TermContribution(word, term.idf, tf, contribution))
        score = 0.0
        for part in parts:
            score += part.contribution
        return ExplainedHit(tool_id, score, exact, tuple(parts))


def _invert(doc_terms: Sequence[Mapping[str, int]]) -> dict[str, list[int]]:
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


def _names(ids: Sequence[str], entries: Sequence[SearchEntry]) -> dict[str, int]:
    """Map each tool's ID and aliases, case-folded, to the tool, rejecting ambiguous names.

    The common case is checked with whole-collection operations, because this runs for every
    planning activity; only a catalog that fails the check is walked again to name the clash.
    """
    names = {tool_id.casefold(): doc for doc, tool_id in enumerate(ids)}
    if len(names) != len(ids) or "" in names:
        _raise_name_clash(entries)
    for doc, entry in enumerate(entries):
        for alias in entry.aliases:
            if names.setdefault(alias.casefold(), doc) != doc or not alias:
                _raise_name_clash(entries)
    return names


def _raise_name_clash(entries: Sequence[SearchEntry]) -> NoReturn:
    """Find the first clash the fast check saw, so the error names the tools involved."""
    names: dict[str, int] = {}
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
            other = names.setdefault(name.casefold(), doc)
            if other != doc:
                raise ValueError(
                    f"tool search name {name!r} of {entry.tool_id!r} also names "
                    f"{entries[other].tool_id!r}"
                )
    raise AssertionError("unreachable: the fast check found a clash the slow one did not")
