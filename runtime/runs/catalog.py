"""Planning catalogs: the tools one planning activity advertises and accepts.

Every planning activity that can start work builds its own catalog: the agent's compiled specs
plus what its registry consumption resolves right now. The catalog is fixed for every model call
and search round of the activity, the next activity reads the registries again (new providers
appear without a restart), and final-answer-only activities never read a registry. Catalogs
belong to one activity of one run: concurrent runs never see each other's dynamic tools, and
the runtime's registrations are never changed.

Every way a registry read can fail is an explicit error: there is no stale-catalog fallback.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass

from agentgen.runtime.contracts.cache import (
    CompiledTool,
    CompiledToolset,
    ContractCache,
    default_cache,
)
from agentgen.runtime.contracts.declarations import ContractError
from agentgen.runtime.contracts.specs import ToolSpec
from agentgen.runtime.lru import LRU
from agentgen.runtime.messages import ToolCallPart
from agentgen.runtime.model_client import AdvertisedTools, ModelClient, ToolDefinition
from agentgen.runtime.pacing import Pacer
from agentgen.runtime.registry.client import BatchResolver, RegistryError
from agentgen.runtime.runs.accepted import AcceptedCall, RegistryBinding
from agentgen.runtime.runs.host import AgentRegistration, RegistryRegistration, RunHost
from agentgen.runtime.runs.model_calls import ModelCalls
from agentgen.runtime.runs.policy import ToolPolicy, lacking_labels, missing_labels
from agentgen.runtime.runs.registry_calls import (
    MalformedReplyError,
    bounded,
    checked_batch,
    checked_listing,
    checked_resolution,
    describe,
    unanswered,
)

__all__ = [
    "CatalogError",
    "DuplicateToolError",
    "OutsideConsumptionError",
    "PlanningCatalog",
    "Refusal",
    "RegistryNotRegisteredError",
    "RegistryReadError",
    "SourceNotFoundError",
    "SourceRemovedError",
    "UnconfiguredAgentExecutorError",
    "VersionMismatchError",
]


class CatalogError(Exception):
    """A registry source could not be read into a planning catalog; the activity fails."""


class RegistryNotRegisteredError(CatalogError):
    pass


class SourceNotFoundError(CatalogError):
    pass


class VersionMismatchError(CatalogError):
    pass


class OutsideConsumptionError(CatalogError):
    pass


class DuplicateToolError(CatalogError):
    pass


class RegistryReadError(CatalogError):
    """A registry could not be read. ``transient`` says the registry did not answer (it was
    unreachable, timed out, or said it was unavailable) rather than answered wrongly: a
    durable engine retries such a planning activity, with backoff; nothing else does."""

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


class SourceRemovedError(CatalogError):
    pass


class UnconfiguredAgentExecutorError(CatalogError):
    pass


@dataclass(frozen=True)
class _Source:
    """One registry toolset as this activity resolved it."""

    registry: str
    name: str
    registration_token: str
    version: str
    deferred: bool
    compiled: CompiledToolset
    #: The toolset's own tags: a run policy sees them on each of its tools, after the
    #: tool's own (a generated provider writes them into each tool's tags already).
    tags: tuple[str, ...] = ()

    def tags_of(self, spec: ToolSpec) -> tuple[str, ...]:
        """The tags a run policy filters ``spec`` on (the tool's, then the toolset's)."""
        if not self.tags:
            return spec.tags
        return tuple(dict.fromkeys((*spec.tags, *self.tags)))


@dataclass(frozen=True)
class Refusal:
    """Why a call was not accepted (the model gets it back as a tool error)."""

    call: ToolCallPart
    reason: str


class _Same:
    """Identifies an object by identity in a cache key (and keeps it alive meanwhile)."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.value is self.value


#: Recent activities' advertised definitions, by what they were made from.
_ADVERTISED: LRU[Hashable, AdvertisedTools] = LRU(16)
_ADVERTISED_LOCK = threading.Lock()


class PlanningCatalog:
    def __init__(
        self,
        host: RunHost,
        registration: AgentRegistration,
        labels: Mapping[str, str],
        policy: ToolPolicy,
        *,
        tools_enabled: bool = True,
        cache: ContractCache | None = None,
        models: ModelCalls | None = None,
    ) -> None:
        self._host = host
        #: The activity's model clients (bounded by the run policy; usage summed).
        self._models = models
        self._registration = registration
        self._labels = dict(labels)
        self._policy = policy
        self._tools_enabled = tools_enabled
        #: Compiled registry contracts, shared with every other activity of the process.
        self._cache = cache if cache is not None else default_cache()
        self._pacer = Pacer()
        self._sources: list[_Source] = []
        self._dynamic: dict[str, tuple[CompiledTool, _Source]] = {}
        #: Registry tools this run may not call, by tool ID: the run labels each requires
        #: and the run lacks. Never advertised, refused when called.
        self._withheld: dict[str, tuple[str, ...]] = {}
        self._advertised: AdvertisedTools | None = None
        definition = registration.definition
        self._static = {spec.id: spec for spec in definition.specs}
        self._deferred = frozenset(definition.deferred_tool_ids)

    @property
    def agent_id(self) -> str:
        return self._registration.definition.id

    # ------------------------------------------------------------------ registry consumption

    def run_labels(self) -> dict[str, str]:
        """A copy of the run's trusted labels (changing it changes nothing)."""
        return dict(self._labels)

    async def include_toolset(
        self, registry: str, name: str, version: str = "", deferred: bool = False
    ) -> None:
        registration = self._registration_of(registry)
        what = f"resolve registry {registry!r} toolset {name!r}"
        try:
            resolved = await bounded(
                registration, registration.client.resolve_toolset(name), "resolve", toolset=name
            )
        except RegistryError as exc:
            if exc.code == "not_found":
                raise SourceNotFoundError(
                    f"registry {registry!r} has no toolset {name!r}: {exc.message}"
                ) from None
            raise RegistryReadError(f"{what}: {describe(exc)}", transient=unanswered(exc)) from None
        except Exception as exc:  # the client's failure, whatever it is: the read failed
            raise RegistryReadError(f"{what}: {describe(exc)}", transient=unanswered(exc)) from exc
        await self._include(registry, name, version, deferred, resolved)

    async def _include(
        self, registry: str, name: str, version: str, deferred: bool, resolved: object
    ) -> None:
        """Add one toolset as its registry resolved it for this activity."""
        what = f"resolve registry {registry!r} toolset {name!r}"
        try:
            toolset, token, digest = checked_resolution(resolved)
        except MalformedReplyError as exc:
            raise RegistryReadError(f"{what}: {exc}") from None
        if toolset.name != name:
            raise RegistryReadError(
                f"registry {registry!r} returned toolset {toolset.name!r} for {name!r}"
            )
        actual = toolset.version or ""
        if version and actual != version:
            raise VersionMismatchError(
                f"registry {registry!r} toolset {name!r} requires version {version!r}, got "
                f"{actual!r}"
            )
        tools = self._registration.definition.registry_tools
        if tools is None or not tools.allows(registry, name, actual):
            raise OutsideConsumptionError(
                f"registry {registry!r} toolset {name!r} is outside agent "
                f"{self.agent_id!r}'s declared consumption"
            )
        try:
            compiled = await self._cache.toolset(
                toolset, name=name, digest=digest, pacer=self._pacer
            )
        except ContractError as exc:
            raise RegistryReadError(f"{what}: {exc}") from None
        source = _Source(registry, name, token, actual, deferred, compiled, tuple(toolset.tags))
        self._sources.append(source)
        self._advertised = None
        static, dynamic = self._static, self._dynamic
        policy = self._policy
        unfiltered = policy.restrict_to_tool is None and not policy.tag_clauses
        for entry in compiled.tools:
            spec = entry.spec
            if spec.id in static or spec.id in dynamic:
                raise DuplicateToolError(
                    f"registry {registry!r} toolset {name!r} repeats tool {spec.id!r} already "
                    f"supplied to agent {self.agent_id!r}"
                )
            if spec.kind == "agent" and spec.agent_id not in self._allowed_agents():
                raise UnconfiguredAgentExecutorError(
                    f"registry tool {spec.id!r} targets unconfigured agent executor "
                    f"{spec.agent_id!r}"
                )
            dynamic[spec.id] = (entry, source)
            if spec.required_labels:
                # Known only now (not when the run started, as a compiled tool's are): a run
                # without them is not offered the tool.
                missing = missing_labels(spec.required_labels, self._labels)
                if missing:
                    self._withheld[spec.id] = tuple(missing)
                    continue
            if unfiltered or policy.allows(spec.id, source.tags_of(spec)):
                # Each advertised definition is made here, a toolset at a time between the
                # loop's turns, not all at once when the activity first lists them (about
                # 25 ms at 10,000 tools).
                _definition(entry, deferred)
        await self._pacer.pause()

    async def include_registry(self, registry: str, deferred: bool = False) -> None:
        registration = self._registration_of(registry)
        client = registration.client
        if isinstance(client, BatchResolver):
            # One read lists the registry and resolves every toolset in it (answering
            # "unchanged" for the answers the client already holds).
            try:
                found = checked_batch(
                    await bounded(registration, client.resolve_toolsets(), "resolve_toolsets")
                )
            except Exception as exc:  # the client's failure, whatever it is: the read failed
                raise RegistryReadError(
                    f"read registry {registry!r}: {describe(exc)}", transient=unanswered(exc)
                ) from exc
            for name, resolved in found:
                if isinstance(resolved, RegistryError) and resolved.code == "not_found":
                    raise SourceRemovedError(
                        f"registry {registry!r} toolset {name!r} was removed while it was "
                        f"being resolved: {resolved.message}"
                    )
                if isinstance(resolved, RegistryError):
                    raise RegistryReadError(
                        f"resolve registry {registry!r} toolset {name!r}: {describe(resolved)}",
                        transient=unanswered(resolved),
                    )
                await self._include(registry, name, "", deferred, resolved)
            return
        try:
            names = checked_listing(await bounded(registration, client.list_toolsets(), "list"))
        except Exception as exc:  # the client's failure, whatever it is: the read failed
            raise RegistryReadError(
                f"list registry {registry!r}: {describe(exc)}", transient=unanswered(exc)
            ) from exc
        for name in names:
            try:
                await self.include_toolset(registry, name, "", deferred)
            except SourceNotFoundError as exc:
                raise SourceRemovedError(
                    f"registry {registry!r} toolset {name!r} was removed between listing and "
                    f"resolving it: {exc}"
                ) from None

    def _registration_of(self, registry: str) -> RegistryRegistration:
        try:
            return self._host.registry(registry)
        except LookupError:
            raise RegistryNotRegisteredError(
                f"runtime: registry {registry!r} is not registered"
            ) from None

    def _allowed_agents(self) -> frozenset[str]:
        return frozenset(self._registration.definition.agent_executors)

    # ------------------------------------------------------------------ advertising

    def advertised_tool_definitions(self) -> list[ToolDefinition]:
        """The activity's definitions after run-policy filtering (a fresh list each call).

        A final-answer-only activity still describes the compiled tools (so a conversation's
        history stays explainable), but accepts no call: its planner asks for an answer.
        """
        return list(self.advertised_tools())

    def advertised_tools(self) -> AdvertisedTools:
        """The same definitions, immutable; what model adapters derive from them is kept.

        An activity whose definitions are those of an earlier one (same agent, policy and
        resolved toolsets) gets the earlier object back, so that adapters do not recompute
        facts about thousands of tools on every request.
        """
        if self._advertised is None:
            key = (
                _Same(self._registration.definition),
                self._policy,
                tuple((source.compiled, source.deferred, source.tags) for source in self._sources),
                frozenset(self._withheld),
            )
            with _ADVERTISED_LOCK:
                found = _ADVERTISED.get(key)
            if found is None:
                found = AdvertisedTools(self._definitions())
                with _ADVERTISED_LOCK:
                    found = _ADVERTISED.put(key, found)
            self._advertised = found
        return self._advertised

    def _definitions(self) -> list[ToolDefinition]:
        policy = self._policy
        static = [
            _advertise(spec, spec.id in self._deferred)
            for spec in self._static.values()
            if policy.allows(spec.id, spec.tags)
        ]
        withheld = self._withheld
        found: Iterable[tuple[CompiledTool, _Source]] = self._dynamic.values()
        if withheld:
            found = [(entry, source) for entry, source in found if entry.spec.id not in withheld]
        if policy.restrict_to_tool is None and not policy.tag_clauses:
            dynamic = [_definition(entry, source.deferred) for entry, source in found]
        else:
            dynamic = [
                _definition(entry, source.deferred)
                for entry, source in found
                if policy.allows(entry.spec.id, source.tags_of(entry.spec))
            ]
        return static + dynamic

    def model(self, model_id: str) -> ModelClient:
        if self._models is not None:
            return self._models.client(model_id)
        return self._host.model(model_id)

    # ------------------------------------------------------------------ acceptance

    def accept(self, call: ToolCallPart) -> AcceptedCall | Refusal:
        """Accept a call against this activity's catalog and policy, saving its contract."""
        if not self._tools_enabled:
            return Refusal(call, "tools are disabled in a final-answer-only activity")
        found = self._dynamic.get(call.tool_id)
        spec = found[0].spec if found is not None else self._static.get(call.tool_id)
        if spec is None:
            return Refusal(call, f"tool {call.tool_id!r} is not available to this agent")
        tags = found[1].tags_of(spec) if found is not None else spec.tags
        if not self._policy.allows(spec.id, tags):
            return Refusal(call, f"tool {call.tool_id!r} is not permitted by the run policy")
        missing = self._withheld.get(spec.id)
        if missing:
            return Refusal(call, lacking_labels(spec.id, missing))
        if found is not None:
            entry, source = found
            partner = source.compiled.partner(entry)
            binding = RegistryBinding(
                registry=source.registry,
                toolset=source.name,
                registration_token=source.registration_token,
                declaration=entry.declaration(),
                partner_declaration=partner.declaration() if partner is not None else None,
                version=source.version,
            )
            return AcceptedCall(call, spec, partner.spec if partner else None, binding)
        return AcceptedCall(call, spec, self._static_partner(spec))

    def _static_partner(self, spec: ToolSpec) -> ToolSpec | None:
        paging = spec.bounds.paging if spec.bounds else None
        if paging is None:
            return None
        partner = paging.continue_tool or paging.source_tool
        return self._static.get(partner) if partner else None

    def compiled_spec(self, tool_id: str) -> ToolSpec | None:
        return self._static.get(tool_id)

    def lacking_labels(self, tool_id: str) -> tuple[str, ...]:
        """The run labels registry tool ``tool_id`` requires and the run lacks (it is never
        offered to this run), or nothing."""
        return self._withheld.get(tool_id, ())

    def has_tool(self, tool_id: str) -> bool:
        """Whether the agent has ``tool_id`` in this activity, whatever the run policy says."""
        return tool_id in self._static or tool_id in self._dynamic


def _definition(entry: CompiledTool, deferred: bool) -> ToolDefinition:
    """A registry tool as advertised: immutable, made once per compiled tool and shared by
    every activity (an agent advertising it with the other deferred flag gets its own)."""
    made = entry.advertised
    if isinstance(made, ToolDefinition) and made.deferred == deferred:
        return made
    definition = _advertise(entry.spec, deferred)
    if made is None:
        entry.advertised = definition
    return definition


def _advertise(spec: ToolSpec, deferred: bool) -> ToolDefinition:
    return ToolDefinition(
        id=spec.id,
        title=spec.title,
        description=spec.description,
        parameters_json=spec.payload.schema_json,
        search=spec.search,
        deferred=deferred,
        tags=spec.tags,
    )
