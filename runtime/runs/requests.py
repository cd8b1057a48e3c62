"""What a run is asked to do and what it answers: requests, outcomes, and run failures.

Kept apart from the loop so that engines, the application object and durable workflows can
speak about runs without importing the loop that executes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agentgen.runtime.agents.definition import RunPolicy
from agentgen.runtime.agents.executors import nested_run_depth
from agentgen.runtime.messages import Message
from agentgen.runtime.model_client import Usage
from agentgen.runtime.runs.accepted import AcceptedCall
from agentgen.runtime.wire_fields import ADDED

__all__ = [
    "MissingLabelsError",
    "ModelTimeoutError",
    "RunError",
    "RunOutcome",
    "RunRequest",
    "ToolCallIdError",
    "at_call_depth",
    "record_run_usage",
    "run_usage",
]

#: The attribute of a failed run's exception that holds what the run cost until it failed.
_ATTRIBUTE = "run_usage"


class RunError(Exception):
    """A run could not start or continue; the message names the agent and the cause.

    ``run_usage`` is what the run cost until it failed, when it failed while running (see
    :func:`run_usage`, which reads it on any exception a run raises)."""

    run_usage: Usage | None = None


def run_usage(exc: BaseException) -> Usage | None:
    """What the failed run that raised ``exc`` cost until it failed, with the same meaning as
    ``RunOutcome.usage`` (its child runs' included; ``usage.complete`` is False where some
    responses' cost is unknown). A run's failure is often not a :class:`RunError` (a
    ``ModelError``, a ``CatalogError``, a planner's own exception, a cancellation), so the
    engines put it on whatever the run raises, as its ``run_usage`` attribute; this reads it
    there, or on the exception ``exc`` was raised from (``raise ... from``, or while handling
    it: ``asyncio.timeout`` turns the run's cancellation into a ``TimeoutError``).

    ``None`` when no engine knows: the exception does not come from a run that started, or
    the engine could not tell what the run cost (a durable run timed out or terminated by the
    server, or cancelled: see the engines' documentation)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        usage = getattr(current, "__dict__", {}).get(_ATTRIBUTE)
        if isinstance(usage, Usage):
            return usage
        # The chain a traceback shows: the explicit cause, else the context unless suppressed.
        if current.__cause__ is not None or current.__suppress_context__:
            current = current.__cause__
        else:
            current = current.__context__
    return None


def record_run_usage(exc: BaseException, usage: Usage) -> None:
    """Put what a failed run cost on the exception it fails with: past the exception's own
    ``__setattr__`` (a frozen dataclass refuses it; every exception keeps a ``__dict__``), so
    that no application exception loses it."""
    object.__setattr__(exc, _ATTRIBUTE, usage)


class MissingLabelsError(RunError):
    pass


class ModelTimeoutError(RunError):
    """A model call took longer than the run policy's ``model_timeout``: it was cancelled and
    the run failed. Never retried (a durable engine's retry would plan again, against a newly
    built catalog); the message names the agent, the run, the model registration and the
    limit."""


class ToolCallIdError(RunError):
    """A planner returned a tool call whose ID is empty or already names another call of the
    run (in the same turn, an earlier turn or the conversation it continues). Nothing of that
    turn runs: executing it could run a call twice, or answer it with another call's result.
    """


@dataclass(frozen=True)
class RunRequest:
    agent_id: str
    messages: Sequence[Message]
    labels: Mapping[str, str] = field(default_factory=dict)
    #: The run's own policy options (restrict-to-tool, tag clauses, limits).
    policy: RunPolicy = field(default_factory=RunPolicy)
    run_id: str = ""
    parent_run_id: str | None = None
    parent_tool_call_id: str | None = None
    #: For a child run answering an agent-as-tool call: the JSON Schema of the result the
    #: parent's tool contract expects (planners produce ``final_value`` matching it).
    result_schema_json: str | None = None
    #: How many registry calls the run is nested in: 0 for a run no registry call started;
    #: a run started while a registry provider serves a call (an agent published as a tool)
    #: gets that call's depth plus one (``Runtime.run`` reads it from the provider; a smaller
    #: value given here does not lower it), and its child runs keep it. Its registry calls
    #: carry it, and one deeper than ``MAX_CALL_DEPTH`` is refused.
    call_depth: int = field(default=0, metadata=ADDED)


def at_call_depth(request: RunRequest) -> RunRequest:
    """``request`` nested as deep as where it is started: a run started while a registry
    provider serves a call (its executor running an agent published as a tool) is one
    registry call deeper than that call, whether or not the executor said so. A depth the
    request gives is kept only when it is deeper: one that is not (an executor forwarding
    ``ToolContext.call_depth``, the served call's own depth) would keep a cycle of agents at
    one depth, never reaching ``MAX_CALL_DEPTH``."""
    depth = nested_run_depth()
    return replace(request, call_depth=depth) if depth > request.call_depth else request


@dataclass(frozen=True)
class RunOutcome:
    run_id: str
    agent_id: str
    transcript: tuple[Message, ...]
    final_text: str
    final_value: Any = None
    #: Calls to tools the activity offered: those that ran, those a person denied, those
    #: whose arguments were invalid (calls refused as not offered are not counted).
    tool_calls: int = 0
    #: Child runs started for agent tools, in order, failed ones included (their calls
    #: answered ``agent_failed``, naming them).
    child_runs: tuple[str, ...] = ()
    parent_run_id: str | None = None
    #: Every call accepted during the run, with the contract it was accepted under.
    accepted_calls: tuple[AcceptedCall, ...] = ()
    #: What the run's model calls cost, its child runs' included (failed ones too): the tokens
    #: the providers reported, and how many responses reported none (``usage.complete`` is
    #: False then, and the counts leave those responses out).
    usage: Usage = field(default_factory=Usage)
    #: Why the final answer stopped, as the planner recorded it in the final message's metadata
    #: (``agentgen.stop_reason``: ``end_turn``, ``stop_sequence``, or a stop its planner was
    #: told to accept, e.g. ``max_tokens``); ``None`` when the planner did not say.
    stop_reason: str | None = None
