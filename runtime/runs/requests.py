"""What a run is asked to do and what it answers: requests, outcomes, and run failures.

Kept apart from the loop so that engines, the application object and durable workflows can
speak about runs without importing the loop that executes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentgen.runtime.agents.definition import RunPolicy
from agentgen.runtime.messages import Message
from agentgen.runtime.model_client import Usage
from agentgen.runtime.runs.accepted import AcceptedCall

__all__ = [
    "MissingLabelsError",
    "ModelTimeoutError",
    "RunError",
    "RunOutcome",
    "RunRequest",
    "ToolCallIdError",
]


class RunError(Exception):
    """A run could not start or continue; the message names the agent and the cause."""


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


@dataclass(frozen=True)
class RunOutcome:
    run_id: str
    agent_id: str
    transcript: tuple[Message, ...]
    final_text: str
    final_value: Any = None
    tool_calls: int = 0
    #: Child runs started for agent tools, in order.
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
