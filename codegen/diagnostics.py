"""Showing design errors: the ``file:line`` line, then the offending source line with a caret
under the DSL call (its span was recorded when the call ran). Colour only on a terminal."""

from __future__ import annotations

import linecache
from collections.abc import Iterable

from agentgen.dsl.errors import DesignError

_RED = "\x1b[31m"
_BOLD = "\x1b[1m"
_DIM = "\x1b[2m"
_RESET = "\x1b[0m"


def excerpt(error: DesignError) -> list[str]:
    """The source line of ``error`` and a caret line under the call, or nothing."""
    loc = error.loc
    if loc.line <= 0:
        return []
    source = linecache.getline(loc.file, loc.line).rstrip("\n")
    if not source.strip():
        return []
    indent = len(source) - len(source.lstrip())
    start = max(_chars(source, loc.col), indent)
    end_col = _chars(source, loc.end_col)
    end = end_col if loc.end_line == loc.line and end_col > start else len(source)
    return [f"    {source.strip()}", "    " + " " * (start - indent) + "^" * max(1, end - start)]


def _chars(source: str, offset: int) -> int:
    """A column Python reports (UTF-8 bytes into the line) as characters into ``source``: a
    caret after ``"größe"`` or a CJK description sat under the wrong characters."""
    return len(source.encode("utf-8")[:offset].decode("utf-8", errors="ignore"))


def format_errors(errors: Iterable[DesignError], *, color: bool = False) -> str:
    linecache.checkcache()
    lines: list[str] = []
    for error in errors:
        head = error.format()
        if color:
            where, _, what = head.partition(": ")
            head = f"{_BOLD}{where}{_RESET}: {_RED}{what}{_RESET}"
        lines.append(head)
        snippet = excerpt(error)
        if color and snippet:
            snippet = [f"{_DIM}{snippet[0]}{_RESET}", f"{_RED}{snippet[1]}{_RESET}"]
        lines.extend(snippet)
    return "\n".join(lines)
