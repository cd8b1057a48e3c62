"""Agent definitions: what a generated package tells the runtime about an agent.

A definition is immutable and carries only facts fixed at generation time (specs, the sorted
deferred tool IDs, the default run policy) plus the agent's registry consumption, an object that
reads exactly the declared sources when a planning activity builds its catalog.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from agentgen.runtime.agents.executors import refuse_wrong_arguments
from agentgen.runtime.contracts.limits import MAX_TOOL_CALLS
from agentgen.runtime.contracts.specs import ToolSpec
from agentgen.runtime.tasks import MIN_TIMEOUT_S, is_number, is_seconds
from agentgen.runtime.wire_fields import ADDED

__all__ = [
    "AgentDefinition",
    "DefinitionError",
    "RegistryCatalog",
    "RegistryTools",
    "RunPolicy",
    "TagClause",
]


@dataclass(frozen=True)
class TagClause:
    """A tool passes when it has one of ``allowed_any`` (if any are given) and none of
    ``denied_any``. Every clause of a policy must pass."""

    allowed_any: tuple[str, ...] = ()
    denied_any: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # A bare string would be taken for its letters (``denied_any="admin"`` denies the
        # tags "a", "d"... and not "admin"), and a list could not be matched against.
        tags = {name: _tags(getattr(self, name)) for name in ("allowed_any", "denied_any")}
        refuse_wrong_arguments(
            "TagClause(...)",
            (
                (
                    name,
                    getattr(self, name),
                    "a tuple, list or set of non-empty tag strings",
                    found is not None,
                    _tag_strings(getattr(self, name)),
                )
                for name, found in tags.items()
            ),
        )
        for name, found in tags.items():
            object.__setattr__(self, name, found)


def _tag_strings(value: object) -> bool:
    """Whether ``value`` is a collection of strings (an empty one is a wrong value, not type)."""
    return isinstance(value, tuple | list | set | frozenset) and all(
        isinstance(tag, str) for tag in value
    )


def _tags(value: object) -> tuple[str, ...] | None:
    """``value`` as a tuple of tags (a set's in sorted order), or None when it is not a
    collection of non-empty strings."""
    if not isinstance(value, tuple | list | set | frozenset):
        return None
    if not all(isinstance(tag, str) and tag for tag in value):
        return None
    return tuple(sorted(value)) if isinstance(value, set | frozenset) else tuple(value)


@dataclass(frozen=True)
class RunPolicy:
    max_tool_calls: int | None = None
    max_consecutive_failed_tool_calls: int | None = None
    tag_clauses: tuple[TagClause, ...] = ()
    #: Only this tool ID may be advertised and executed.
    restrict_to_tool: str | None = None
    #: Seconds one model call of the run (a model client's ``complete``, every search round
    #: of it included) may take; a call still going then is cancelled and the run fails with
    #: ``ModelTimeoutError``. None leaves model calls to the client's own timeout.
    model_timeout: float | None = field(default=None, metadata=ADDED)

    def __post_init__(self) -> None:
        refuse_wrong_arguments(
            "RunPolicy(...)",
            (
                (
                    "max_tool_calls",
                    self.max_tool_calls,
                    f"None (no limit) or an int from 0 to {MAX_TOOL_CALLS} (MAX_TOOL_CALLS)",
                    _count(self.max_tool_calls, 0),
                    type(self.max_tool_calls) is int,
                ),
                (
                    # 0 is refused: no failure is needed to reach "0 failures in a row", so
                    # every activity after the first was final-answer-only.
                    "max_consecutive_failed_tool_calls",
                    self.max_consecutive_failed_tool_calls,
                    f"None (no limit) or an int from 1 to {MAX_TOOL_CALLS} (MAX_TOOL_CALLS)",
                    _count(self.max_consecutive_failed_tool_calls, 1),
                    type(self.max_consecutive_failed_tool_calls) is int,
                ),
                (
                    "tag_clauses",
                    self.tag_clauses,
                    "a tuple of TagClause",
                    isinstance(self.tag_clauses, tuple)
                    and all(isinstance(c, TagClause) for c in self.tag_clauses),
                ),
                (
                    "restrict_to_tool",
                    self.restrict_to_tool,
                    "None or a tool ID",
                    self.restrict_to_tool is None
                    or (isinstance(self.restrict_to_tool, str) and self.restrict_to_tool != ""),
                    isinstance(self.restrict_to_tool, str),
                ),
                (
                    "model_timeout",
                    self.model_timeout,
                    "None or a positive, finite number of seconds, at least 0.001 (1 ms)",
                    self.model_timeout is None
                    or (is_seconds(self.model_timeout) and self.model_timeout >= MIN_TIMEOUT_S),
                    is_number(self.model_timeout),
                ),
            ),
        )


def _count(value: object, least: int) -> bool:
    """Whether ``value`` is no limit or a count from ``least`` to :data:`MAX_TOOL_CALLS`: a
    larger count bounds nothing a model's context can hold, and read as a limit where there
    was none."""
    return value is None or (type(value) is int and least <= value <= MAX_TOOL_CALLS)


class RegistryCatalog(Protocol):
    """The catalog of one planning activity, as registry consumption sees it."""

    def run_labels(self) -> dict[str, str]: ...

    async def include_toolset(
        self, registry: str, name: str, version: str = "", deferred: bool = False
    ) -> None: ...

    async def include_registry(self, registry: str, deferred: bool = False) -> None: ...


class RegistryTools(Protocol):
    """Which registry sources an agent consumes.

    ``resolve`` adds the sources to a planning catalog; ``allows`` says which sources saved
    calls may keep using (an empty ``version`` means any current version).
    """

    async def resolve(self, catalog: RegistryCatalog) -> None: ...

    def allows(self, registry: str, toolset: str, version: str) -> bool: ...


class DefinitionError(ValueError):
    """An agent definition was misused; the message names the agent."""


@dataclass(frozen=True)
class AgentDefinition:
    id: str
    description: str
    specs: tuple[ToolSpec, ...]
    deferred_tool_ids: tuple[str, ...] = ()
    policy: RunPolicy = field(default_factory=RunPolicy)
    registry_tools: RegistryTools | None = None
    required_labels: tuple[str, ...] = ()
    #: Agents whose exported tools this agent may call (they run as child runs).
    agent_executors: tuple[str, ...] = ()
    #: Names of the registries the agent's registry tools read (sorted); sealing the runtime
    #: checks that each one is registered.
    registries: tuple[str, ...] = ()
    _custom_registry_tools: bool = field(default=False, repr=False)

    def spec(self, tool_id: str) -> ToolSpec | None:
        return self.spec_index().get(tool_id)

    def spec_index(self) -> Mapping[str, ToolSpec]:
        return {s.id: s for s in self.specs}

    def with_registry_tools(self, tools: RegistryTools) -> AgentDefinition:
        """A copy that consumes registries through the application's own ``tools``.

        Allowed exactly once: a second call would silently drop the first choice.
        """
        if tools is None:
            raise DefinitionError(f"agent {self.id!r}: registry tools must not be None")
        if self._custom_registry_tools:
            raise DefinitionError(
                f"agent {self.id!r}: registry tools must be supplied exactly once"
            )
        return replace(self, registry_tools=tools, _custom_registry_tools=True)
