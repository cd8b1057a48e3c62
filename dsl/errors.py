"""Design errors: what is wrong, where in the design tree, and at which line of the design file."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from agentgen.dsl.location import SourceLoc


@dataclass(frozen=True)
class DesignError:
    """One problem in a design.

    ``where`` is the path through the design tree (``service "s" › agent "a" › Use(records)``);
    ``related`` are the other places a message refers to (the first declaration of a duplicate),
    already named in the message text and kept here for tools that want to show them.
    """

    loc: SourceLoc
    where: str
    message: str
    related: tuple[SourceLoc, ...] = field(default=())

    def format(self, cwd: str | None = None) -> str:
        prefix = self.loc.display_path(cwd)
        if self.loc.line > 0:  # line 0: the whole file
            prefix += f":{self.loc.line}"
        if self.where:
            return f"{prefix}: {self.where}: {self.message}"
        return f"{prefix}: {self.message}"

    def __str__(self) -> str:
        return self.format()


def sort_errors(errors: Iterable[DesignError]) -> list[DesignError]:
    """File order, then line, then the order they were found in (stable)."""
    return sorted(errors, key=lambda e: (e.loc.file, e.loc.line, e.loc.col))


class DesignErrors(Exception):
    """Raised by :func:`agentgen.dsl.evaluate` when a design breaks rules; carries every error
    found in one run."""

    def __init__(self, errors: Iterable[DesignError]) -> None:
        self.errors: list[DesignError] = sort_errors(dict.fromkeys(errors))
        super().__init__(self.format())

    def format(self, cwd: str | None = None) -> str:
        return "\n".join(e.format(cwd) for e in self.errors)
