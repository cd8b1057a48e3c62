"""What a step or a run cost, as the details of a Temporal heartbeat or failure.

Usage reaches the workflow in answers (``Planned.usage``, a child run's result), but a step or
a child run that failed answers nothing: what its model calls cost travels in the details of
its failure (and of a planning attempt's heartbeats, which outlive a timeout). The details are
plain JSON objects, which a worker of an older release decodes without knowing them; a reader
that finds none, or a malformed one, counts the cost as unknown (``Usage.unreported``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentgen.runtime.model_client import Usage

__all__ = ["KEY", "failure_usage", "usage_detail", "usage_in"]

#: The key of the detail that holds the usage.
KEY = "agentgen.usage"

_COUNTS = ("input_tokens", "output_tokens", "unreported")


def usage_detail(usage: Usage, **marks: Any) -> dict[str, Any]:
    """``usage`` as a detail, with the writer's ``marks`` (plain JSON values) beside it."""
    counts = {name: getattr(usage, name) for name in _COUNTS}
    return {KEY: counts, **marks}


def usage_in(detail: Any) -> Usage | None:
    """The usage a detail holds (None: not a detail of ours, or malformed)."""
    counts = detail.get(KEY) if isinstance(detail, dict) else None
    if not isinstance(counts, dict):
        return None
    numbers = [counts.get(name) for name in _COUNTS]
    valid = [n for n in numbers if type(n) is int and n >= 0]
    if len(valid) != len(_COUNTS):
        return None
    input_tokens, output_tokens, unreported = valid
    return Usage(input_tokens, output_tokens, unreported)


def failure_usage(details: Sequence[Any]) -> Usage | None:
    """What a run cost until it failed, from the details of its failure (a run's failure holds
    its usage last; None: it holds none)."""
    return usage_in(details[-1]) if details else None
