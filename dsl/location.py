"""Where in the user's design file a DSL call was made.

Every expression records the span of the call that created it, so that every error, including
the ones found only after the whole design ran, can point at the user's line (and, for the
caret display, the exact columns of the call).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from types import CodeType, FrameType

_DSL_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep

# Positions of every instruction of a code object, computed once per code object: a design of
# thousands of tools makes thousands of calls from the same module body.
_POSITIONS: dict[CodeType, list[tuple[int | None, int | None, int | None, int | None]]] = {}


@dataclass(frozen=True, order=True)
class SourceLoc:
    """A span in a design file: 1-based lines, 0-based columns (as Python's AST reports them)."""

    file: str
    line: int
    col: int = 0
    end_line: int = 0
    end_col: int = 0

    def display_path(self, cwd: str | None = None) -> str:
        """The file relative to ``cwd`` when it lies below it, else as recorded."""
        base = os.path.abspath(cwd or os.getcwd())
        path = os.path.abspath(self.file)
        if path.startswith(base + os.sep):
            return os.path.relpath(path, base)
        return self.file

    def short(self, cwd: str | None = None) -> str:
        return f"{self.display_path(cwd)}:{self.line}"


UNKNOWN_LOC = SourceLoc("<unknown>", 0)


def _is_internal(filename: str) -> bool:
    return filename.startswith(_DSL_DIR)


def caller_loc() -> SourceLoc:
    """The location of the innermost frame outside ``agentgen.dsl`` (the user's DSL call)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and _is_internal(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return UNKNOWN_LOC
    return frame_loc(frame)


def frame_loc(frame: FrameType) -> SourceLoc:
    return code_loc(frame.f_code, frame.f_lasti, frame.f_lineno)


def code_loc(code: CodeType, lasti: int, lineno: int | None) -> SourceLoc:
    """The span of the instruction at ``lasti`` of ``code`` (a frame's, or a traceback's)."""
    positions = _POSITIONS.get(code)
    if positions is None:
        positions = list(code.co_positions())
        _POSITIONS[code] = positions
    index = lasti // 2
    line, end_line, col, end_col = (
        positions[index] if 0 <= index < len(positions) else (None, None, None, None)
    )
    line = line if line is not None else (lineno or 0)
    return SourceLoc(
        file=code.co_filename,
        line=line,
        col=col or 0,
        end_line=end_line if end_line is not None else line,
        end_col=end_col or 0,
    )


def forget_positions() -> None:
    """Drop cached positions (called after a load, so code objects can be collected)."""
    _POSITIONS.clear()
