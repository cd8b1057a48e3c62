"""Tool search speed and ranking agreement: agentgen's rankings against bm25s and rank_bm25.

Run from the repository root with `python bench/search.py` (the peers need `pip install -e
'.[bench]'`: bm25s, rank-bm25 and numpy; `--no-peers` times agentgen alone, without them). It
prints two Markdown tables and writes nothing: speed per system (agentgen's default ``fields``
ranking, its ``classic`` BM25, bm25s and rank_bm25, which rank like ``classic``), and the size
of the search documents each agentgen ranking needs per tool. The catalogs are synthetic and
deterministic, so runs differ only by machine noise. Search *quality* is measured on real tools
by ``agentgen eval-search`` (bench/search_eval).

    python bench/search.py [--sizes 100,1000,10000] [--queries 200] [--build-budget 3]
                           [--no-peers]
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentgen.runtime.search.document import (
    SearchDocument,
    search_document,
    search_text,
    tokenize,
)
from agentgen.runtime.search.index import Ranking, SearchEntry, SearchIndex

SEED = 20240601
SIZES = (100, 1_000, 10_000)
QUERY_COUNT = 200
TOP_K = 5
K1 = 1.2
B = 0.75
# Builds are repeated until this much time is spent (--build-budget), at least MIN_BUILDS times.
BUILD_BUDGET_S = 3.0
MIN_BUILDS = 7
QUERY_ROUNDS = 3

# Function words that real tool descriptions are full of: they sit at the head of the
# Zipf distribution, so a few words occur in most tools, as they do in practice.
FUNCTION_WORDS = str.split(
    "the a of to and for by in with from or on an its all as at into this that "
    "one each given any new when if"
)
VERBS = str.split(
    "get list create update delete search find send fetch sync export import archive approve "
    "cancel schedule resolve assign tag upload download merge validate summarize translate "
    "count lookup publish rename move"
)
SYLLABLES = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"] + ["qu", "th", "sh", "ch"]


@dataclass(frozen=True)
class Tool:
    tool_id: str
    title: str
    description: str


def make_vocabulary(rng: random.Random, size: int) -> list[str]:
    words: list[str] = []
    seen = set(FUNCTION_WORDS) | set(VERBS)
    while len(words) < size:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


class Zipf:
    """Draws words with probability proportional to 1 / (rank + offset) (Zipf-Mandelbrot)."""

    def __init__(self, rng: random.Random, words: Sequence[str], offset: int = 0) -> None:
        self.rng = rng
        self.words = list(words)
        total = 0.0
        self.cumulative = []
        for rank in range(1, len(words) + 1):
            total += 1.0 / (rank + offset)
            self.cumulative.append(total)

    def draw(self, count: int) -> list[str]:
        return self.rng.choices(self.words, cum_weights=self.cumulative, k=count)


def make_catalog(size: int, query_count: int = QUERY_COUNT) -> tuple[list[Tool], list[str]]:
    rng = random.Random(SEED + size)
    content = make_vocabulary(rng, 3_000)
    zipf = Zipf(rng, FUNCTION_WORDS[:6] + content[:200] + FUNCTION_WORDS[6:] + content[200:])
    # Nouns have a flatter head: no single noun names a third of a large catalog.
    nouns = Zipf(rng, content, offset=20)
    toolsets = [f"{a}_{b}" if rng.random() < 0.3 else a for a, b in itertools.pairwise(content)]
    toolsets = toolsets[: max(1, size // 20)]
    tools: list[Tool] = []
    ids: set[str] = set()
    while len(tools) < size:
        verb = rng.choice(VERBS)
        name = "_".join([verb, *nouns.draw(rng.randint(1, 2))])
        tool_id = f"{rng.choice(toolsets)}.{name}"
        if tool_id in ids:
            continue
        ids.add(tool_id)
        title = " ".join([verb.capitalize(), *nouns.draw(rng.randint(1, 3))])
        words = zipf.draw(rng.randint(7, 15))
        description = " ".join([verb.capitalize(), *words]) + "."
        tools.append(Tool(tool_id, title, description))
    queries = []
    for _ in range(query_count):
        tool = rng.choice(tools)
        own = sorted(set(tokenize(f"{tool.title} {tool.description}")))
        picked = rng.sample(own, min(len(own), rng.randint(1, 3)))
        queries.append(" ".join([*picked, *zipf.draw(1)]))
    return tools, queries


def median_ms(samples: Sequence[float]) -> float:
    return statistics.median(samples) * 1e3


def percentile_us(samples: Sequence[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))] * 1e6


def time_builds(build: Callable[[int], object], budget: float = BUILD_BUDGET_S) -> list[float]:
    """Time build + first query; each repetition starts with a different query."""
    samples: list[float] = []
    started = time.perf_counter()
    repetition = 0
    while repetition < MIN_BUILDS or time.perf_counter() - started < budget:
        gc.collect()
        t0 = time.perf_counter()
        build(repetition)
        samples.append(time.perf_counter() - t0)
        repetition += 1
    return samples


def time_queries(run: Callable[[int], object], count: int) -> list[float]:
    """Per-query latency after one warm-up pass: for each query, the median over rounds."""
    for i in range(count):
        run(i)
    per_query: list[list[float]] = [[] for _ in range(count)]
    for _ in range(QUERY_ROUNDS):
        for i in range(count):
            t0 = time.perf_counter()
            run(i)
            per_query[i].append(time.perf_counter() - t0)
    return [statistics.median(times) for times in per_query]


def time_cold_queries(
    entries: Sequence[SearchEntry], queries: Sequence[str], ranking: Ranking
) -> list[float]:
    """Per-query latency on a fresh index, so every query word is weighed for the first time."""
    samples = []
    for query in queries:
        index = SearchIndex(entries, ranking)
        t0 = time.perf_counter()
        index.search(query, TOP_K)
        samples.append(time.perf_counter() - t0)
    return samples


def top_by_id(scores: Any, ids: Sequence[str]) -> list[str]:
    """The top-k of a score vector with ties broken by tool ID, as agentgen ranks."""
    import numpy as np

    positive = np.flatnonzero(scores > 0)
    order = sorted(positive.tolist(), key=lambda doc: (-float(scores[doc]), ids[doc]))
    return [ids[doc] for doc in order[:TOP_K]]


@dataclass
class Row:
    system: str
    build_ms: float | None
    latencies: list[float]
    agreement: float | None = None


def document_bytes(documents: Sequence[SearchDocument]) -> float:
    """Mean bytes per tool of the documents' compact JSON (what registry declarations carry;
    generated specs.py literals are of the same order)."""
    sizes = [len(json.dumps(d.to_json(), separators=(",", ":"))) for d in documents]
    return statistics.mean(sizes)


def bench_size(
    size: int, query_count: int = QUERY_COUNT, budget: float = BUILD_BUDGET_S, peers: bool = True
) -> tuple[list[Row], tuple[float, float]]:
    """The rows of one catalog size: agentgen's rankings, then (``peers``) bm25s and
    rank_bm25 on the same corpus and queries."""
    tools, queries = make_catalog(size, query_count)
    ids = [tool.tool_id for tool in tools]
    texts = [search_text(tool.tool_id, tool.title, tool.description) for tool in tools]
    # Counted ahead, as the generator does; not part of any timing.
    classic_docs = [SearchDocument.from_text(text) for text in texts]
    field_docs = [search_document(t.tool_id, t.title, t.description) for t in tools]
    classic = [SearchEntry(i, d) for i, d in zip(ids, classic_docs, strict=True)]
    fields = [SearchEntry(i, d) for i, d in zip(ids, field_docs, strict=True)]
    corpus = [tokenize(text) for text in texts]
    vocabulary = {word for tokens in corpus for word in tokens}
    # Distinct query words, as agentgen scores them, and only known ones, which bm25s needs.
    query_tokens = [sorted(set(tokenize(query)) & vocabulary) for query in queries]
    n = len(queries)

    def agentgen_build(entries: list[SearchEntry], ranking: Ranking) -> Callable[[int], object]:
        return lambda i: SearchIndex(entries, ranking).search(queries[i % n], TOP_K)

    field_index = SearchIndex(fields)
    classic_index = SearchIndex(classic, "classic")
    rows = [
        Row(
            "agentgen fields (default)",
            median_ms(time_builds(agentgen_build(fields, "fields"), budget)),
            time_queries(lambda i: field_index.search(queries[i], TOP_K), n),
        ),
        Row(
            "agentgen fields, words not yet weighed",
            None,
            time_cold_queries(fields, queries, "fields"),
        ),
        Row(
            "agentgen classic",
            median_ms(time_builds(agentgen_build(classic, "classic"), budget)),
            time_queries(lambda i: classic_index.search(queries[i], TOP_K), n),
        ),
        Row(
            "agentgen classic, words not yet weighed",
            None,
            time_cold_queries(classic, queries, "classic"),
        ),
    ]
    if peers:
        rows += _peer_rows(ids, corpus, queries, query_tokens, classic_index, budget)
    return rows, (document_bytes(classic_docs), document_bytes(field_docs))


def _peer_rows(
    ids: Sequence[str],
    corpus: Sequence[list[str]],
    queries: Sequence[str],
    query_tokens: Sequence[list[str]],
    classic_index: SearchIndex,
    budget: float,
) -> list[Row]:
    """bm25s and rank_bm25 on the corpus (the [bench] extra: imported only when asked for)."""
    import bm25s
    import numpy as np
    from rank_bm25 import BM25Okapi

    n = len(queries)

    def bm25s_index() -> bm25s.BM25:
        retriever = bm25s.BM25(method="lucene", k1=K1, b=B)
        retriever.index(corpus, show_progress=False)
        return retriever

    def bm25s_build(i: int) -> object:
        return bm25s_index().retrieve([query_tokens[i % n]], k=TOP_K, show_progress=False)

    def rank_bm25_build(i: int) -> object:
        scores = BM25Okapi(corpus, k1=K1, b=B).get_scores(query_tokens[i % n])
        return np.argpartition(-scores, TOP_K)[:TOP_K]

    retriever = bm25s_index()
    okapi = BM25Okapi(corpus, k1=K1, b=B)

    def bm25s_retrieve(i: int) -> object:
        return retriever.retrieve([query_tokens[i]], k=TOP_K, show_progress=False)

    def bm25s_scores(i: int) -> object:
        return np.argpartition(-retriever.get_scores(query_tokens[i]), TOP_K)[:TOP_K]

    def okapi_scores(i: int) -> object:
        return np.argpartition(-okapi.get_scores(query_tokens[i]), TOP_K)[:TOP_K]

    ours = [[hit.tool_id for hit in classic_index.search(query, TOP_K)] for query in queries]

    def agreement(score: Callable[[list[str]], Any]) -> float:
        same = sum(
            mine == (top_by_id(score(tokens), ids) if tokens else [])
            for mine, tokens in zip(ours, query_tokens, strict=True)
        )
        return same / n

    return [
        Row(
            "bm25s `retrieve`",
            median_ms(time_builds(bm25s_build, budget)),
            time_queries(bm25s_retrieve, n),
            agreement(retriever.get_scores),
        ),
        Row("bm25s `get_scores` + argpartition", None, time_queries(bm25s_scores, n)),
        Row(
            "rank_bm25 `BM25Okapi`",
            median_ms(time_builds(rank_bm25_build, budget)),
            time_queries(okapi_scores, n),
            agreement(okapi.get_scores),
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        type=lambda text: [int(size) for size in text.split(",")],
        default=list(SIZES),
        help="catalog sizes, comma-separated (default: 100,1000,10000)",
    )
    parser.add_argument(
        "--queries", type=int, default=QUERY_COUNT, help=f"queries per catalog ({QUERY_COUNT})"
    )
    parser.add_argument(
        "--build-budget",
        type=float,
        default=BUILD_BUDGET_S,
        help=f"seconds of repeated builds per system, at least {MIN_BUILDS} ({BUILD_BUDGET_S:g})",
    )
    parser.add_argument(
        "--no-peers",
        action="store_true",
        help="time agentgen alone (bm25s, rank_bm25 and numpy need not be installed)",
    )
    args = parser.parse_args()
    print(
        "| tools | system | build + first query, ms | query p50, µs | query p95, µs "
        "| build ÷ agentgen classic | p50 ÷ agentgen classic | same top-5 as agentgen classic |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    sizes: list[tuple[int, float, float]] = []
    for size in args.sizes:
        rows, (classic_bytes, field_bytes) = bench_size(
            size, args.queries, args.build_budget, peers=not args.no_peers
        )
        sizes.append((size, classic_bytes, field_bytes))
        base = rows[2]
        build, p50 = base.build_ms, percentile_us(base.latencies, 0.5)
        assert build is not None
        for row in rows:
            row_p50 = percentile_us(row.latencies, 0.5)
            cells = [
                f"{size:,}",
                row.system,
                "" if row.build_ms is None else f"{row.build_ms:.2f}",
                f"{row_p50:.0f}",
                f"{percentile_us(row.latencies, 0.95):.0f}",
                "" if row.build_ms is None else f"{row.build_ms / build:.2f}",
                f"{row_p50 / p50:.2f}",
                "" if row.agreement is None else f"{row.agreement:.1%}",
            ]
            print("| " + " | ".join(cells) + " |")
    print()
    print("| tools | classic document, bytes per tool | fields document, bytes per tool |")
    print("|---:|---:|---:|")
    for size, classic_bytes, field_bytes in sizes:
        print(f"| {size:,} | {classic_bytes:.0f} | {field_bytes:.0f} |")


if __name__ == "__main__":
    main()
