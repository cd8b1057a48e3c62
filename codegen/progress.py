"""Progress of a long command, for the person watching it.

Shown on stderr only when stderr is a terminal: a command's output (``--json`` included) is on
stdout and never holds progress, and stderr that goes to a file, a pipe or CI logs stays as
quiet as before (a redrawn bar there is only noise).
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

import click

if TYPE_CHECKING:
    from click._termui_impl import ProgressBar

__all__ = ["StageBars", "terminal_progress"]


class StageBars:
    """One click progress bar per stage, each finished when the next stage starts."""

    def __init__(self, file: TextIO) -> None:
        self._file = file
        self._stage: str | None = None
        self._bar: ProgressBar[int] | None = None
        self._done = 0

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage != self._stage:
            self.close()
            self._stage, self._done = stage, 0
            self._bar = click.progressbar(
                length=total, label=stage, file=self._file, show_eta=False, show_pos=True
            )
            self._bar.__enter__()
        assert self._bar is not None
        self._bar.update(done - self._done)
        self._done = done

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None

    def __enter__(self) -> StageBars:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def terminal_progress() -> StageBars | None:
    """Bars on stderr when it is a terminal; None (no progress) otherwise."""
    stream = sys.stderr
    return StageBars(stream) if stream.isatty() else None
