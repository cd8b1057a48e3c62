"""Checks the labelled queries of the search evaluation set and splits them into two halves.

Reads `queries_tune.json` and `queries_heldout.json` (both, merged), checks every query against
`catalog.json` and writes both files again, split by a fixed rule and sorted by query text:

    a query goes to queries_tune.json when the first byte of sha256(query, UTF-8) is even,
    otherwise to queries_heldout.json.

The split depends only on a query's own text, so adding or editing one query never moves
another. Running it on the committed files changes nothing. Run from the repository root:

    python bench/search_eval/split.py          # check and rewrite
    python bench/search_eval/split.py --check  # check only; non-zero exit if a file would change
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CATALOG = HERE / "catalog.json"
TUNE = HERE / "queries_tune.json"
HELDOUT = HERE / "queries_heldout.json"
KINDS = ("direct", "paraphrase", "arguments", "keywords")
FIELDS = ("query", "expected", "kind")


def in_tune(query: str) -> bool:
    return hashlib.sha256(query.encode("utf-8")).digest()[0] % 2 == 0


def problems(queries: Sequence[dict[str, Any]], tool_names: set[str]) -> list[str]:
    found: list[str] = []
    seen: set[str] = set()
    for entry in queries:
        query = entry.get("query")
        if tuple(entry) != FIELDS:
            found.append(f"{query!r}: fields must be {FIELDS}, got {tuple(entry)}")
        if not isinstance(query, str) or not query.strip() or query != query.strip():
            found.append(f"{query!r}: the query must be non-empty text without outer spaces")
            continue
        if query.lower() in seen:
            found.append(f"{query!r}: duplicate query")
        seen.add(query.lower())
        expected = entry.get("expected")
        if not isinstance(expected, list) or not expected:
            found.append(f"{query!r}: expected must be a non-empty list")
            continue
        if len(set(expected)) != len(expected):
            found.append(f"{query!r}: expected lists a tool twice")
        found.extend(
            f"{query!r}: {name!r} is not in catalog.json"
            for name in expected
            if name not in tool_names
        )
        if entry.get("kind") not in KINDS:
            found.append(f"{query!r}: kind must be one of {KINDS}")
    return found


def dump(queries: Sequence[dict[str, Any]]) -> str:
    return json.dumps(sorted(queries, key=lambda e: e["query"]), indent=1, ensure_ascii=False)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="write nothing")
    options = parser.parse_args(argv)
    tool_names = {entry["name"] for entry in json.loads(CATALOG.read_text())}
    queries = [*json.loads(TUNE.read_text()), *json.loads(HELDOUT.read_text())]
    found = problems(queries, tool_names)
    if found:
        print("\n".join(found), file=sys.stderr)
        return 1
    tune = [entry for entry in queries if in_tune(entry["query"])]
    heldout = [entry for entry in queries if not in_tune(entry["query"])]
    stale = False
    for path, part in ((TUNE, tune), (HELDOUT, heldout)):
        text = dump(part) + "\n"
        if path.read_text() != text:
            stale = True
            if not options.check:
                path.write_text(text)
    for name, part in (("tune", tune), ("heldout", heldout)):
        kinds = Counter(entry["kind"] for entry in part)
        counts = ", ".join(f"{kind} {kinds[kind]}" for kind in KINDS)
        print(f"{name}: {len(part)} queries ({counts})")
    tools = {name for entry in queries for name in entry["expected"]}
    toolsets = {name.split(".", 1)[0] for name in tools}
    print(
        f"all: {len(queries)} queries, {len(tools)} distinct expected tools"
        f" from {len(toolsets)} toolsets"
    )
    if stale and options.check:
        print("the split files are not as split.py writes them", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
