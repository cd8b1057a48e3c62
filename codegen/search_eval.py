"""Measuring tool search: recall@1/@k, MRR and nDCG@k of a ranking over a labelled set.

``agentgen eval-search CATALOG QUERIES`` and notebooks call :func:`evaluate_search`. Search
documents are built from each tool's name, description and parameters by the same function the
generator and the registry compiler use, and ranked by the runtime's index, so a number measured
here is what an agent's OpenAI tool search would do with those tools.

A catalog is a JSON list of ``{"name", "description", "parameters"}`` (OpenAI/MCP tool
definitions; ``inputSchema`` is read as ``parameters``) or an MCP ``tools/list`` result
(``{"tools": [...]}``), alone or in its whole JSON-RPC response (``{"jsonrpc", "id",
"result"}``). A name without a dot is used as its own tool ID. Queries are a JSON list of
``{"query", "expected": [names]}``, each with an optional ``"kind"`` (a label such as
``paraphrase``) by which recall@k is also reported.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgen.runtime.contracts.ids import humanize_title
from agentgen.runtime.contracts.json_values import find_lone_surrogate
from agentgen.runtime.search.document import search_document, search_text
from agentgen.runtime.search.index import RANKINGS, SearchEntry, SearchIndex
from agentgen.runtime.visible import visible

__all__ = [
    "RANK_DEPTH",
    "CatalogError",
    "EvalQuery",
    "EvalTool",
    "KindRecall",
    "Miss",
    "Progress",
    "SearchEvaluation",
    "evaluate_search",
    "load_catalog",
    "load_queries",
]


#: How deep each query's ranking is read (at least k): a miss's rank is known within it.
RANK_DEPTH = 50

#: Told how far an evaluation is: the stage ("search documents", "queries"), how many of its
#: items are done and how many it has. Tens of thousands of tools take seconds per stage.
Progress = Callable[[str, int, int], None]

#: Search documents built between two reports of progress.
_DOCUMENTS_PER_REPORT = 1000


class CatalogError(ValueError):
    """A catalog or query file is not in a form the harness reads; the message says where."""


@dataclass(frozen=True)
class EvalTool:
    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True)
class EvalQuery:
    query: str
    expected: tuple[str, ...]
    #: How the request was written (``direct``, ``paraphrase``, ...), when the set says.
    kind: str | None = None


@dataclass(frozen=True)
class KindRecall:
    """Recall@k over the queries of one kind."""

    kind: str
    queries: int
    recall_at_k: float


@dataclass(frozen=True)
class Miss:
    """A query whose expected tools did not rank in the top k."""

    query: str
    expected: tuple[str, ...]
    #: The expected tool's rank (1-based) within the evaluation's ``depth``, or None when it
    #: ranked lower or the query did not match it at all (see ``matched``).
    rank: int | None
    #: What ranked above it (the top k).
    above: tuple[str, ...]
    #: How many tools the query matched, read up to the evaluation's ``depth``: fewer than the
    #: depth is every tool it matched, so an expected tool without a rank scored nothing.
    matched: int = 0

    def placed(self, depth: int, tools: int) -> str:
        """Where the expected tool landed, in words that are true of any catalog: "not in the
        top 50" read as a ranking cut short in a catalog of 40 tools, when the query had not
        matched the tool at all."""
        of = f"{tools:,} tool{'s' if tools != 1 else ''}"
        if self.rank is not None:
            return f"ranked {self.rank} of {of}"
        if not self.matched:
            return f"not found by the query, which matched none of the {of}"
        if self.matched < depth:
            return (
                f"not found by the query, which matched {self.matched:,} other "
                f"tool{'s' if self.matched != 1 else ''} of the {of}"
            )
        return f"not in the top {depth:,} of {of}"


@dataclass(frozen=True)
class SearchEvaluation:
    ranking: str
    k: int
    queries: int
    recall_at_1: float
    recall_at_k: float
    mrr: float
    ndcg_at_k: float
    misses: tuple[Miss, ...] = field(default=(), repr=False)
    #: Recall@k per kind of query, by kind name; empty when no query has a kind.
    by_kind: tuple[KindRecall, ...] = ()
    #: How many tools the catalog has.
    tools: int = 0

    @property
    def depth(self) -> int:
        """How many hits of each query were read: a miss without a rank is not among them."""
        return max(self.k, RANK_DEPTH)

    def worst(self, count: int = 10) -> tuple[Miss, ...]:
        """The misses whose expected tool ranked lowest (not found at all first)."""
        return tuple(sorted(self.misses, key=lambda m: (-(m.rank or 10**6), m.query))[:count])

    def to_json(self) -> dict[str, Any]:
        return {
            "ranking": self.ranking,
            "k": self.k,
            "queries": self.queries,
            "recall@1": round(self.recall_at_1, 4),
            f"recall@{self.k}": round(self.recall_at_k, 4),
            "mrr": round(self.mrr, 4),
            f"ndcg@{self.k}": round(self.ndcg_at_k, 4),
            "by_kind": {
                kind.kind: {"queries": kind.queries, f"recall@{self.k}": round(kind.recall_at_k, 4)}
                for kind in self.by_kind
            },
            "tools": self.tools,
            "worst_misses": [
                {"query": m.query, "expected": list(m.expected), "rank": m.rank,
                 "matched": m.matched, "above": list(m.above)}
                for m in self.worst()
            ],
        }  # fmt: skip


def _read_json(path: str | Path) -> Any:
    try:
        # utf-8-sig: editors on Windows start UTF-8 files with a byte order mark.
        text = Path(path).read_text(encoding="utf-8-sig")
        if not text.strip():
            raise CatalogError(f"{path}: the file is empty; it should hold a JSON list")
        return json.loads(text)
    except OSError as exc:
        raise CatalogError(f"cannot read {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise CatalogError(f"{path}: not JSON: {exc}") from None
    except UnicodeDecodeError as exc:
        raise CatalogError(
            f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason}); save it as UTF-8 JSON"
        ) from None
    except RecursionError:
        raise CatalogError(
            f"{path}: JSON nested too deeply to read (about a thousand levels); no tool "
            "definition or query needs that many: check what wrote the file"
        ) from None


def _lone_surrogate(value: Any) -> str | None:
    """Where in a JSON value a string (or key) holds a lone surrogate (``"\\ud800"`` is valid
    JSON but no UTF-8 text: the report could not be printed), as ``"description"`` or
    ``"parameters"."properties"."q"``; None when nothing does."""
    found = find_lone_surrogate(value)
    if found is None:
        return None
    where = ""
    for key in found.path:
        if isinstance(key, int):
            where += f"[{key}]"
        else:
            where += f".{json.dumps(key)}" if where else json.dumps(key)
    if found.in_key:
        return f"a key of {where}" if where else "a key"
    return where or "the value"


def _refuse_surrogates(item: Any, where: str) -> None:
    found = _lone_surrogate(item)
    if found:
        raise CatalogError(
            f"{where}: {found} holds a lone surrogate (an escape such as \\ud800 that no UTF-8 "
            "text can hold); fix what wrote the file"
        )


def _json_kind(value: Any) -> str:
    """What a JSON value is, for an error message ("a string", "null"...)."""
    if value is None:
        return "null"
    if isinstance(value, dict):
        keys = ", ".join(map(repr, list(value)[:8])) or "none"
        return f"a JSON object (keys: {keys})"
    kinds = {bool: "a boolean", list: "a list", str: "a string"}
    return kinds.get(type(value), "a number")


#: How much of a JSON-RPC error's code and message a refusal shows.
_SAID_CHARS = 300


def _jsonrpc_result(path: str | Path, response: dict[str, Any]) -> Any:
    """The ``result`` of a whole JSON-RPC response, as saved from an MCP server's ``tools/list``
    (``curl`` or an inspector saves the envelope, not just the result); an error response is
    refused with the server's own error, since it holds no tools to measure."""
    error = response.get("error")
    if error is not None:  # some servers send "error": null beside a result
        if isinstance(error, dict):
            code, message = error.get("code"), error.get("message")
            # The server's words, escaped and cut: they reach a terminal.
            said = visible(str(message)[:_SAID_CHARS])
            if code is not None:
                said = f"code {visible(str(code)[:_SAID_CHARS])}: {said}"
        else:
            said = _json_kind(error)
        raise CatalogError(
            f"{path}: a JSON-RPC error response ({said}), not a tools/list result; the server "
            "refused the request: save the response of a tools/list call that succeeded"
        )
    if "result" not in response:
        raise CatalogError(
            f'{path}: a JSON-RPC message with neither "result" nor "error"; save the response '
            "of the server's tools/list call"
        )
    return response["result"]


def load_catalog(path: str | Path) -> list[EvalTool]:
    data = _read_json(path)
    if isinstance(data, dict) and "jsonrpc" in data:
        data = _jsonrpc_result(path, data)
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        cursor = data.get("nextCursor")
        if cursor is not None:
            # One page of a paginated listing: measured as the whole catalog, search would
            # look better than it is among all the server's tools.
            raise CatalogError(
                f"{path}: this tools/list result is one page (nextCursor {cursor!r}): save "
                "every page's tools into one list, or the result of a listing that has no "
                "nextCursor"
            )
        data = data["tools"]  # an MCP tools/list result
    if not isinstance(data, list):
        raise CatalogError(
            f'{path}: a catalog is a JSON list of tools {{"name", "description", "parameters"}} '
            f'or an MCP tools/list result {{"tools": [...]}}; found {_json_kind(data)}'
        )
    if not data:
        raise CatalogError(f"{path}: the catalog has no tools; list the tools to search")
    tools: list[EvalTool] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(data):
        where = f"{path}: tool {index}"
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            swapped = isinstance(item, dict) and "query" in item and "name" not in item
            hint = " (this looks like a queries file: the catalog comes first)" if swapped else ""
            raise CatalogError(f'{where}: each tool needs a non-empty string "name"{hint}')
        _refuse_surrogates(item, where)
        name = item["name"]
        first = seen.setdefault(name, index)
        if first != index:
            # Names that differ only in case are two tools, as for providers, registries and
            # the runtime's tool search (records.getUser and records.GetUser).
            raise CatalogError(
                f"{where}: the name {name!r} is repeated (tool {first}); tool names must be "
                "unique: rename or remove one"
            )
        description = item.get("description")
        description = "" if description is None else description
        parameters = item.get("parameters", item.get("inputSchema"))
        parameters = {} if parameters is None else parameters
        if not isinstance(description, str):
            raise CatalogError(
                f'{where} ({visible(name)}): "description" must be a string, not '
                f"{_json_kind(description)}"
            )
        if not isinstance(parameters, dict):
            raise CatalogError(
                f'{where} ({visible(name)}): "parameters" (or "inputSchema") must be a JSON Schema '
                f"object, not {_json_kind(parameters)}"
            )
        tools.append(EvalTool(name, description, parameters))
    return tools


def load_queries(path: str | Path, names: Sequence[str] = ()) -> list[EvalQuery]:
    data = _read_json(path)
    if not isinstance(data, list):
        raise CatalogError(
            f'{path}: queries are a JSON list of {{"query", "expected"}}; found {_json_kind(data)}'
        )
    if not data:
        raise CatalogError(f"{path}: there are no queries; list the requests to measure")
    known = set(names)
    queries: list[EvalQuery] = []
    for index, item in enumerate(data):
        where = f"{path}: query {index}"
        if not isinstance(item, dict) or not isinstance(item.get("query"), str):
            swapped = isinstance(item, dict) and "name" in item and "query" not in item
            hint = " (this looks like a catalog: the queries come second)" if swapped else ""
            raise CatalogError(f'{where}: each query needs a string "query"{hint}')
        _refuse_surrogates(item, where)
        if not item["query"].strip():
            raise CatalogError(
                f'{where}: "query" is empty; write the request its tools should be found by'
            )
        expected = item.get("expected")
        if (
            not isinstance(expected, list)
            or not expected
            or not all(isinstance(e, str) for e in expected)
        ):
            raise CatalogError(f'{where}: "expected" must be a non-empty list of tool names')
        unknown = sorted(set(expected) - known) if known else []
        if unknown:
            raise CatalogError(
                f"{where}: expects tools the catalog lacks: {', '.join(map(visible, unknown))}; "
                "correct the names or add the tools to the catalog"
            )
        kind = item.get("kind")
        if kind is not None and (not isinstance(kind, str) or not kind):
            raise CatalogError(f'{where}: "kind", when given, must be a non-empty string')
        queries.append(EvalQuery(item["query"], tuple(expected), kind))
    return queries


def _entries(tools: Sequence[EvalTool], progress: Progress | None) -> list[SearchEntry]:
    entries = []
    for count, tool in enumerate(tools, start=1):
        title = humanize_title(tool.name)
        document = search_document(tool.name, title, tool.description, tool.parameters)
        entries.append(
            SearchEntry(tool.name, document, text=search_text(tool.name, title, tool.description))
        )
        if progress is not None and (count % _DOCUMENTS_PER_REPORT == 0 or count == len(tools)):
            progress("search documents", count, len(tools))
    return entries


def evaluate_search(
    tools: Sequence[EvalTool],
    queries: Sequence[EvalQuery],
    *,
    k: int = 5,
    ranking: str = "fields",
    progress: Progress | None = None,
) -> SearchEvaluation:
    """Rank every query over ``tools`` and measure where the expected tools land; ``progress``,
    when given, is told how far it is."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if not queries:
        raise ValueError("no queries to measure: pass at least one labelled query")
    if ranking not in RANKINGS:
        raise ValueError(f"unknown ranking {ranking!r}; choose one of {', '.join(RANKINGS)}")
    index = SearchIndex(_entries(tools, progress), ranking=ranking)
    depth = max(k, RANK_DEPTH)
    hits_1 = hits_k = reciprocal = gain = 0.0
    misses: list[Miss] = []
    kinds: dict[str, list[bool]] = {}
    for done, query in enumerate(queries):
        if progress is not None:
            progress("queries", done, len(queries))
        ranked = [hit.tool_id for hit in index.search(query.query, depth)]
        expected = set(query.expected)
        positions = [i for i, name in enumerate(ranked) if name in expected]
        first = positions[0] if positions else None
        hits_1 += first == 0
        found = first is not None and first < k
        hits_k += found
        if query.kind is not None:
            kinds.setdefault(query.kind, []).append(found)
        reciprocal += 1.0 / (first + 1) if first is not None else 0.0
        dcg = sum(1.0 / math.log2(i + 2) for i in positions if i < k)
        ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(expected), k)))
        gain += dcg / ideal
        if first is None or first >= k:
            misses.append(
                Miss(query.query, query.expected, first + 1 if first is not None else None,
                     tuple(ranked[:k]), len(ranked))
            )  # fmt: skip
    if progress is not None:
        progress("queries", len(queries), len(queries))
    count = len(queries)
    by_kind = tuple(
        KindRecall(kind, len(found), sum(found) / len(found))
        for kind, found in sorted(kinds.items())
    )
    return SearchEvaluation(
        ranking, k, len(queries), hits_1 / count, hits_k / count, reciprocal / count,
        gain / count, tuple(misses), by_kind, len(tools),
    )  # fmt: skip
