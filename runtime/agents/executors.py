"""How tools run: the context a call gets, and the executor seams applications implement.

Generated toolset packages define a typed ``Protocol`` per toolset (one async method per tool)
and a ``bind`` function that adapts an implementation to :class:`ToolsetExecutor`, the untyped
seam the runtime dispatches through after it decoded and validated the payload.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

__all__ = [
    "OutcomeUnknownError",
    "ToolContext",
    "ToolsetExecutor",
    "UnknownToolError",
    "described",
    "implementation_problem",
    "nested_run_depth",
    "nested_runs_at",
    "refuse_wrong_arguments",
    "serving_registry_call",
]


@dataclass(frozen=True)
class ToolContext:
    """What a tool call knows about where it runs. ``labels`` is a read-only copy of the run's
    trusted labels (never supplied by the model)."""

    run_id: str
    agent_id: str
    tool_id: str
    tool_call_id: str
    labels: Mapping[str, str] = field(default_factory=dict)
    #: How many registry calls this call is nested in: for a call a registry provider
    #: serves, the call's own depth; for a tool of a run, the run's (0 for a run no registry
    #: call started). A run the tool starts is one deeper than a registry call it serves.
    call_depth: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", MappingProxyType(dict(self.labels)))


#: The registry call depth of runs started here: set while a provider runs a call (its depth
#: plus one), so that the runs its executor starts make their registry calls one deeper, and a
#: cycle of agents published through registries ends at ``MAX_CALL_DEPTH`` without every
#: executor having to pass the depth on.
_NESTED_RUN_DEPTH: ContextVar[int] = ContextVar("agentgen_nested_run_depth", default=0)


def nested_run_depth() -> int:
    """The registry call depth of a run started here: 0, or, inside a call a registry
    provider serves (even in a task the executor started), that call's depth plus one."""
    return _NESTED_RUN_DEPTH.get()


@contextmanager
def serving_registry_call(call_depth: int) -> Iterator[None]:
    """While a provider's executor serves a registry call nested in ``call_depth`` others:
    the runs it starts are nested in one more."""
    with nested_runs_at(call_depth + 1):
        yield


@contextmanager
def nested_runs_at(depth: int) -> Iterator[None]:
    """While a run's executor runs a tool of a run nested in ``depth`` registry calls: the
    runs it starts are nested as deep (on a durable engine's worker, where the activity does
    not run inside the provider's call that started the run)."""
    token = _NESTED_RUN_DEPTH.set(depth)
    try:
        yield
    finally:
        _NESTED_RUN_DEPTH.reset(token)


class ToolsetExecutor(Protocol):
    """Runs the tools of one toolset. ``payload`` is already decoded and validated (a generated
    model, or a JSON value for schema-typed tools); the return value is encoded and validated
    against the tool's result contract by the runtime."""

    async def execute(self, tool_id: str, payload: Any, context: ToolContext) -> Any: ...


class UnknownToolError(LookupError):
    """An executor was asked for a tool it does not implement."""


class OutcomeUnknownError(Exception):
    """The call's request left, and its answer was lost: the tool may have had its effect.

    An executor raises it when it cannot tell whether the call ran (a connection that dropped
    or a read that timed out after the request was sent), naming the tool and what happened.
    The model then reads ``outcome_unknown`` ("do not retry"), as for a call past the engine's
    ``tool_timeout`` or a registry call whose answer was lost, rather than ``tool_failed``,
    which invites a retry that could repeat the effect.
    """


def implementation_problem(value: object, protocol: str, methods: Sequence[str]) -> str | None:
    """What keeps ``value`` from implementing ``protocol`` (whose tools call ``methods``), as
    the rest of an error message that names where ``value`` came from (it starts with its
    separator), or ``None`` when nothing does.

    Shared by agent registration and the provider SDK, so that ``None``, a class instead of an
    instance or an object lacking a tool's method is refused before anything runs rather than
    failing every call with an ``AttributeError``."""
    if value is None:
        return f" is None; pass an object implementing {protocol}"
    if isinstance(value, type):
        return (
            f" is the class {value.__name__}, not an instance; pass {value.__name__}(...), an "
            f"object implementing {protocol}"
        )
    lacking = [m for m in methods if not callable(getattr(value, m, None))]
    if lacking:
        return (
            f": {described(value)} does not implement {protocol}: it has no method "
            f"{', '.join(lacking)}; pass an object implementing {protocol}"
        )
    return None


def described(value: object) -> str:
    """A value as an error names it: its repr (cut short) and its type. An integer past
    Python's digit limit for ``repr`` (``10**5000``) is given by its size: its repr raised
    ValueError in place of the error naming the argument."""
    try:
        text = repr(value)
    except ValueError:
        if not isinstance(value, int):
            raise
        text = f"an integer of {value.bit_length()} bits"
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


Check = tuple[str, object, str, object] | tuple[str, object, str, object, object]


def refuse_wrong_arguments(owner: str, checks: Iterable[Check]) -> None:
    """Raise for every argument whose check failed, in one message: ``checks`` are (name,
    value, what it must be, whether it is right[, whether it is of the right type]). Public
    constructors check their arguments where they are given, so a wrong one is named there,
    not as an AttributeError of a later run.

    ``TypeError`` when an argument is of the wrong type, ``ValueError`` when every argument at
    fault is of the right type with a wrong value (a negative count, an empty name), as Python
    itself does: a check without the fifth element is about the type alone. Every constructor
    raised ``TypeError`` for both, where others (``ModelPlanner``'s ``max_tokens``,
    ``RetryPolicy``) raised ``ValueError`` for both."""
    problems: list[str] = []
    wrong_type = False
    for name, value, kind, right, *typed in checks:
        if right:
            continue
        problems.append(f"{name} must be {kind}, not {described(value)}")
        wrong_type = wrong_type or not (typed and typed[0])
    if problems:
        error = TypeError if wrong_type else ValueError
        raise error(f"{owner}: {'; '.join(problems)}")
