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

from collections.abc import Mapping
from dataclasses import dataclass

from agentgen.runtime.contracts import compiler
from agentgen.runtime.contracts.declarations import ContractError, ToolSchema
from agentgen.runtime.contracts.specs import ToolSpec
from agentgen.runtime.messages import ToolCallPart
from agentgen.runtime.model_client import ModelClient, ToolDefinition
from agentgen.runtime.registry.client import RegistryClient, RegistryError
from agentgen.runtime.runs.accepted import AcceptedCall, RegistryBinding
from agentgen.runtime.runs.host import AgentRegistration, RunHost
from agentgen.runtime.runs.policy import ToolPolicy

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
    pass


class SourceRemovedError(CatalogError):
    pass


class UnconfiguredAgentExecutorError(CatalogError):
    pass


@dataclass(frozen=True)
class _Dynamic:
    spec: ToolSpec
    binding: RegistryBinding
    deferred: bool


@dataclass(frozen=True)
class Refusal:
    """Why a call was not accepted (the model gets it back as a tool error)."""

    call: ToolCallPart
    reason: str


class PlanningCatalog:
    def __init__(
        self,
        host: RunHost,
        registration: AgentRegistration,
        labels: Mapping[str, str],
        policy: ToolPolicy,
        *,
        tools_enabled: bool = True,
    ) -> None:
        self._host = host
        self._registration = registration
        self._labels = dict(labels)
        self._policy = policy
        self._tools_enabled = tools_enabled
        self._dynamic: dict[str, _Dynamic] = {}
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
        client = self._client(registry)
        try:
            resolved = await client.resolve_toolset(name)
        except RegistryError as exc:
            if exc.code == "not_found":
                raise SourceNotFoundError(
                    f"registry {registry!r} has no toolset {name!r}: {exc.message}"
                ) from None
            raise RegistryReadError(
                f"resolve registry {registry!r} toolset {name!r}: {exc}"
            ) from None
        except Exception as exc:
            raise RegistryReadError(
                f"resolve registry {registry!r} toolset {name!r}: {exc}"
            ) from exc
        toolset = resolved.toolset
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
        declarations = {tool.name: tool for tool in toolset.tools}
        for tool in toolset.tools:
            try:
                spec = compiler.compile(tool, toolset=name)
            except ContractError as exc:
                raise RegistryReadError(
                    f"resolve registry {registry!r} toolset {name!r}: {exc}"
                ) from None
            if spec.id in self._static or spec.id in self._dynamic:
                raise DuplicateToolError(
                    f"registry {registry!r} toolset {name!r} repeats tool {spec.id!r} already "
                    f"supplied to agent {self.agent_id!r}"
                )
            if spec.kind == "agent" and spec.agent_id not in self._allowed_agents():
                raise UnconfiguredAgentExecutorError(
                    f"registry tool {spec.id!r} targets unconfigured agent executor "
                    f"{spec.agent_id!r}"
                )
            partner = _partner_declaration(tool, declarations)
            binding = RegistryBinding(
                registry=registry,
                toolset=name,
                registration_token=resolved.registration_token,
                declaration=tool.to_json(),
                partner_declaration=partner.to_json() if partner is not None else None,
                version=actual,
            )
            self._dynamic[spec.id] = _Dynamic(spec, binding, deferred)

    async def include_registry(self, registry: str, deferred: bool = False) -> None:
        client = self._client(registry)
        try:
            names = sorted(await client.list_toolsets())
        except Exception as exc:
            raise RegistryReadError(f"list registry {registry!r}: {exc}") from exc
        for name in names:
            try:
                await self.include_toolset(registry, name, "", deferred)
            except SourceNotFoundError as exc:
                raise SourceRemovedError(
                    f"registry {registry!r} toolset {name!r} was removed between listing and "
                    f"resolving it: {exc}"
                ) from None

    def _client(self, registry: str) -> RegistryClient:
        try:
            client: RegistryClient = self._host.registry(registry).client
            return client
        except LookupError:
            raise RegistryNotRegisteredError(
                f"runtime: registry {registry!r} is not registered"
            ) from None

    def _allowed_agents(self) -> frozenset[str]:
        return frozenset(self._registration.definition.agent_executors)

    # ------------------------------------------------------------------ advertising

    def _specs(self) -> list[tuple[ToolSpec, bool]]:
        static = [(spec, spec.id in self._deferred) for spec in self._static.values()]
        dynamic = [(d.spec, d.deferred) for d in self._dynamic.values()]
        return static + dynamic

    def advertised_tool_definitions(self) -> list[ToolDefinition]:
        """The activity's definitions after run-policy filtering (fresh objects each call).

        A final-answer-only activity still describes the compiled tools (so a conversation's
        history stays explainable), but accepts no call: its planner asks for an answer.
        """
        return [
            ToolDefinition(
                id=spec.id,
                title=spec.title,
                description=spec.description,
                parameters_json=spec.payload.schema_json,
                search=spec.search,
                deferred=deferred,
                tags=spec.tags,
            )
            for spec, deferred in self._specs()
            if self._policy.allows(spec.id, spec.tags)
        ]

    def model(self, model_id: str) -> ModelClient:
        return self._host.model(model_id)

    # ------------------------------------------------------------------ acceptance

    def accept(self, call: ToolCallPart) -> AcceptedCall | Refusal:
        """Accept a call against this activity's catalog and policy, saving its contract."""
        if not self._tools_enabled:
            return Refusal(call, "tools are disabled in a final-answer-only activity")
        dynamic = self._dynamic.get(call.tool_id)
        spec = dynamic.spec if dynamic is not None else self._static.get(call.tool_id)
        if spec is None:
            return Refusal(call, f"tool {call.tool_id!r} is not available to this agent")
        if not self._policy.allows(spec.id, spec.tags):
            return Refusal(call, f"tool {call.tool_id!r} is not permitted by the run policy")
        if dynamic is not None:
            binding = dynamic.binding
            partner = (
                compiler.compile(
                    ToolSchema.model_validate(binding.partner_declaration), toolset=binding.toolset
                )
                if binding.partner_declaration is not None
                else None
            )
            return AcceptedCall(call, spec, partner, binding)
        return AcceptedCall(call, spec, self._static_partner(spec))

    def _static_partner(self, spec: ToolSpec) -> ToolSpec | None:
        paging = spec.bounds.paging if spec.bounds else None
        if paging is None:
            return None
        partner = paging.continue_tool or paging.source_tool
        return self._static.get(partner) if partner else None

    def compiled_spec(self, tool_id: str) -> ToolSpec | None:
        return self._static.get(tool_id)


def _partner_declaration(
    tool: ToolSchema, declarations: Mapping[str, ToolSchema]
) -> ToolSchema | None:
    contract_ = tool.consumer_contract
    paging = contract_.bounds.paging if contract_ and contract_.bounds else None
    if paging is None:
        return None
    partner = paging.continue_tool or paging.source_tool
    return declarations.get(partner) if partner else None
