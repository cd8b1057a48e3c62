"""Run policy: which tools a run may see and call, how many calls it may make, and how long
one model call may take.

One predicate decides both what is advertised to the model and what may execute: a tool the
model never saw (filtered out, or never in the catalog) is refused at execution too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from agentgen.runtime.agents.definition import RunPolicy, TagClause

__all__ = ["EffectivePolicy", "ToolPolicy", "lacking_labels", "merge", "missing_labels"]

T = TypeVar("T", int, float)


@dataclass(frozen=True)
class ToolPolicy:
    """The compiled predicate of a run (restrict-to-tool and tag clauses)."""

    restrict_to_tool: str | None = None
    tag_clauses: tuple[TagClause, ...] = ()

    def allows(self, tool_id: str, tags: Iterable[str]) -> bool:
        if self.restrict_to_tool is not None and tool_id != self.restrict_to_tool:
            return False
        present = set(tags)
        for clause in self.tag_clauses:
            if clause.allowed_any and not present.intersection(clause.allowed_any):
                return False
            if present.intersection(clause.denied_any):
                return False
        return True


@dataclass(frozen=True)
class EffectivePolicy:
    """A run's policy: the agent's default, the runtime's, and the run's own options merged
    (limits take the strictest value, clauses all apply)."""

    tools: ToolPolicy
    max_tool_calls: int | None
    max_consecutive_failed_tool_calls: int | None
    #: Seconds one model call may take (None: the model client's own timeout).
    model_timeout: float | None = None


def _strictest(*values: T | None) -> T | None:
    given = [v for v in values if v is not None]
    return min(given) if given else None


def merge(*policies: RunPolicy) -> EffectivePolicy:
    restrict = {p.restrict_to_tool for p in policies if p.restrict_to_tool is not None}
    if len(restrict) > 1:
        raise ValueError(
            f"run policies restrict the run to different tools: {', '.join(sorted(restrict))}"
        )
    return EffectivePolicy(
        tools=ToolPolicy(
            restrict_to_tool=next(iter(restrict), None),
            tag_clauses=tuple(c for p in policies for c in p.tag_clauses),
        ),
        max_tool_calls=_strictest(*(p.max_tool_calls for p in policies)),
        max_consecutive_failed_tool_calls=_strictest(
            *(p.max_consecutive_failed_tool_calls for p in policies)
        ),
        model_timeout=_strictest(*(p.model_timeout for p in policies)),
    )


def missing_labels(required: Sequence[str], labels: Mapping[str, str]) -> list[str]:
    """Every required run label that ``labels`` lacks (or leaves empty), sorted."""
    return sorted({name for name in required if not labels.get(name)})


def lacking_labels(tool_id: str, missing: Sequence[str]) -> str:
    """Why a registry tool requiring run labels the run lacks is refused."""
    return (
        f"tool {tool_id!r} requires run labels this run does not have: {', '.join(missing)}; "
        "it is not available to this run (the run's labels are set by whoever starts it)"
    )
