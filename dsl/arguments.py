"""Where one argument of a DSL call is in the design file.

A call records the span of the whole call (:mod:`agentgen.dsl.location`); an error about one
of its arguments (``Retry``'s ``backoff_max``, a tool's description) carets that argument, and
names its line when the call spans several. The argument is found by parsing the design file
and taking the call expression whose span is the call's: read only when such an error is
reported, once per file and load. Whenever it cannot be found (no source, an argument passed
through ``*args`` or ``**kwargs``), the whole call is the location, as before.
"""

from __future__ import annotations

import ast
import linecache

from agentgen.dsl.location import SourceLoc

#: The source of each design file parsed so far and its call expressions by span (None for a
#: source that does not parse). A file edited since is parsed again; all are dropped after each
#: load (:func:`forget_calls`).
_CALLS: dict[str, tuple[str, dict[tuple[int, int, int, int], ast.Call] | None]] = {}


def _calls(file: str) -> dict[tuple[int, int, int, int], ast.Call] | None:
    linecache.checkcache(file)
    source = "".join(linecache.getlines(file))
    cached = _CALLS.get(file)
    if cached is not None and cached[0] == source:
        return cached[1]
    calls: dict[tuple[int, int, int, int], ast.Call] | None = None
    try:
        tree = ast.parse(source, file) if source else None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None  # the load itself reported the file, or ran it compiled some other way
    if tree is not None:
        calls = {
            (node.lineno, node.col_offset, node.end_lineno or 0, node.end_col_offset or 0): node
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
        }
    _CALLS[file] = (source, calls)
    return calls


def argument_loc(loc: SourceLoc, position: int | None, keyword: str | None = None) -> SourceLoc:
    """The span of the argument of the call at ``loc`` written as ``keyword=...`` (name
    included) or as the ``position``-th positional argument (0-based); ``loc`` itself when it
    cannot be told."""
    calls = _calls(loc.file) if loc.line > 0 else None
    node = calls.get((loc.line, loc.col, loc.end_line, loc.end_col)) if calls else None
    if node is None:
        return loc
    found: ast.expr | ast.keyword | None = None
    if keyword is not None:
        found = next((k for k in node.keywords if k.arg == keyword), None)
    if found is None and position is not None:
        for index, arg in enumerate(node.args):
            if isinstance(arg, ast.Starred):
                break  # which value lands at ``position`` is known only at run time
            if index == position:
                found = arg
                break
    if found is None:
        return loc
    return SourceLoc(
        loc.file,
        found.lineno,
        found.col_offset,
        found.end_lineno or found.lineno,
        found.end_col_offset or 0,
    )


def forget_calls() -> None:
    """Drop parsed files (called after a load: the next may read an edited file)."""
    _CALLS.clear()
