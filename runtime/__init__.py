"""agentgen's runtime: what generated agent packages and applications import.

Import every name from here (``from agentgen.runtime import Runtime, ModelPlanner``): these
names are the public surface, kept stable across releases, while the modules that define them
may move. Generated packages import only these names. The public submodules are
:mod:`agentgen.runtime.adapters` (model adapters), :mod:`agentgen.runtime.contracts`
(``contracts.compile`` and ``contracts.fingerprint`` for dynamic declarations),
:mod:`agentgen.runtime.transcript` (storing and compacting transcripts),
:mod:`agentgen.runtime.trace` (a run's trace for people, from its outcome or a stored
transcript),
:mod:`agentgen.runtime.testing` (scripted and function model clients, recorded provider
exchanges played through the real adapters: testing agents without a network) and
:mod:`agentgen.runtime.engines.temporal` (workers, local servers and history replay for
durable runs on Temporal; the engine itself is ``TemporalEngine``, from here).

Names load on first use, so importing this package costs nothing until a name is used, and an
adapter's provider SDK (or the Temporal SDK) is needed only when that adapter (or the Temporal
engine) is. The runtime never imports the DSL or the generator.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentgen.runtime.lazy_names import lazy_names

if TYPE_CHECKING:
    from agentgen.runtime import adapters, contracts, testing, trace, transcript
    from agentgen.runtime.adapters import (
        AnthropicMessagesModel as AnthropicMessagesModel,
    )
    from agentgen.runtime.adapters import (
        BedrockConverseModel as BedrockConverseModel,
    )
    from agentgen.runtime.adapters import (
        EmptyRefusalError as EmptyRefusalError,
    )
    from agentgen.runtime.adapters import (
        EmptyReplyError as EmptyReplyError,
    )
    from agentgen.runtime.adapters import (
        HistoryReplayError as HistoryReplayError,
    )
    from agentgen.runtime.adapters import (
        MissingNamespaceHistoryError as MissingNamespaceHistoryError,
    )
    from agentgen.runtime.adapters import (
        ModelRefusalError as ModelRefusalError,
    )
    from agentgen.runtime.adapters import (
        OpenAIResponsesModel as OpenAIResponsesModel,
    )
    from agentgen.runtime.adapters import (
        OutputBudgetError as OutputBudgetError,
    )
    from agentgen.runtime.adapters import (
        ProviderNameError as ProviderNameError,
    )
    from agentgen.runtime.adapters import (
        ToolIdentityError as ToolIdentityError,
    )
    from agentgen.runtime.agents.definition import (
        AgentDefinition as AgentDefinition,
    )
    from agentgen.runtime.agents.definition import (
        DefinitionError as DefinitionError,
    )
    from agentgen.runtime.agents.definition import (
        RegistryCatalog as RegistryCatalog,
    )
    from agentgen.runtime.agents.definition import (
        RegistryTools as RegistryTools,
    )
    from agentgen.runtime.agents.definition import (
        RunPolicy as RunPolicy,
    )
    from agentgen.runtime.agents.definition import (
        TagClause as TagClause,
    )
    from agentgen.runtime.agents.executors import (
        OutcomeUnknownError as OutcomeUnknownError,
    )
    from agentgen.runtime.agents.executors import (
        ToolContext as ToolContext,
    )
    from agentgen.runtime.agents.executors import (
        ToolsetExecutor as ToolsetExecutor,
    )
    from agentgen.runtime.agents.executors import (
        UnknownToolError as UnknownToolError,
    )
    from agentgen.runtime.agents.model_planner import ModelPlanner as ModelPlanner
    from agentgen.runtime.agents.planning import (
        PlanInput as PlanInput,
    )
    from agentgen.runtime.agents.planning import (
        Planner as Planner,
    )
    from agentgen.runtime.agents.planning import (
        PlannerContext as PlannerContext,
    )
    from agentgen.runtime.agents.planning import (
        PlanResult as PlanResult,
    )
    from agentgen.runtime.agents.planning import (
        PlanResumeInput as PlanResumeInput,
    )
    from agentgen.runtime.agents.planning import (
        RunContext as RunContext,
    )
    from agentgen.runtime.app import (
        AgentClient as AgentClient,
    )
    from agentgen.runtime.app import (
        RegistrationClosedError as RegistrationClosedError,
    )
    from agentgen.runtime.app import (
        RegistrationError as RegistrationError,
    )
    from agentgen.runtime.app import (
        Runtime as Runtime,
    )
    from agentgen.runtime.app import (
        checked_executor as checked_executor,
    )
    from agentgen.runtime.contracts.codecs import (
        FieldIssue as FieldIssue,
    )
    from agentgen.runtime.contracts.codecs import (
        PayloadError as PayloadError,
    )
    from agentgen.runtime.contracts.declarations import (
        ContractError as ContractError,
    )
    from agentgen.runtime.contracts.declarations import (
        ToolSchema as ToolSchema,
    )
    from agentgen.runtime.contracts.declarations import (
        ToolsetDeclaration as ToolsetDeclaration,
    )
    from agentgen.runtime.contracts.schemas import EmptyPayload as EmptyPayload
    from agentgen.runtime.contracts.specs import (
        BoundsSpec as BoundsSpec,
    )
    from agentgen.runtime.contracts.specs import (
        ConfirmationSpec as ConfirmationSpec,
    )
    from agentgen.runtime.contracts.specs import (
        PagingSpec as PagingSpec,
    )
    from agentgen.runtime.contracts.specs import (
        ServerDataSpec as ServerDataSpec,
    )
    from agentgen.runtime.contracts.specs import (
        SpecIndex as SpecIndex,
    )
    from agentgen.runtime.contracts.specs import (
        ToolSpec as ToolSpec,
    )
    from agentgen.runtime.contracts.specs import (
        TypeSpec as TypeSpec,
    )
    from agentgen.runtime.contracts.specs import (
        empty_payload as empty_payload,
    )
    from agentgen.runtime.contracts.specs import (
        model_type as model_type,
    )
    from agentgen.runtime.contracts.specs import (
        null_result as null_result,
    )
    from agentgen.runtime.contracts.specs import (
        schema_type as schema_type,
    )
    from agentgen.runtime.contracts.toolset_text import ToolsetText as ToolsetText
    from agentgen.runtime.contracts.wire import ToolsetDeclarations as ToolsetDeclarations
    from agentgen.runtime.engines.base import Engine as Engine
    from agentgen.runtime.engines.memory import InMemoryEngine as InMemoryEngine
    from agentgen.runtime.engines.temporal.client import (
        RunCancelledError as RunCancelledError,
    )
    from agentgen.runtime.engines.temporal.client import (
        TemporalEngine as TemporalEngine,
    )
    from agentgen.runtime.engines.temporal.namespaces import (
        NamespaceNotFoundError as NamespaceNotFoundError,
    )
    from agentgen.runtime.engines.temporal.payload_limits import (
        PayloadTooLargeError as PayloadTooLargeError,
    )
    from agentgen.runtime.engines.temporal.settings import (
        TemporalSettings as TemporalSettings,
    )
    from agentgen.runtime.mcp import (
        InexactNumberError as InexactNumberError,
    )
    from agentgen.runtime.mcp import (
        MCPAnswerLostError as MCPAnswerLostError,
    )
    from agentgen.runtime.mcp import (
        MCPCaller as MCPCaller,
    )
    from agentgen.runtime.mcp import (
        MCPResultError as MCPResultError,
    )
    from agentgen.runtime.mcp import (
        MCPToolError as MCPToolError,
    )
    from agentgen.runtime.mcp import (
        MCPToolsetExecutor as MCPToolsetExecutor,
    )
    from agentgen.runtime.mcp import (
        SessionCaller as SessionCaller,
    )
    from agentgen.runtime.mcp_changes import (
        ToolListChanges as ToolListChanges,
    )
    from agentgen.runtime.mcp_check import (
        MCPCheckError as MCPCheckError,
    )
    from agentgen.runtime.mcp_check import (
        MCPDeclaration as MCPDeclaration,
    )
    from agentgen.runtime.mcp_check import (
        MCPServerCheck as MCPServerCheck,
    )
    from agentgen.runtime.mcp_check import (
        MCPServerMismatch as MCPServerMismatch,
    )
    from agentgen.runtime.mcp_check import (
        MCPToolProblem as MCPToolProblem,
    )
    from agentgen.runtime.mcp_check import (
        check_mcp_server as check_mcp_server,
    )
    from agentgen.runtime.messages import (
        Message as Message,
    )
    from agentgen.runtime.messages import (
        Part as Part,
    )
    from agentgen.runtime.messages import (
        TextPart as TextPart,
    )
    from agentgen.runtime.messages import (
        ToolCallPart as ToolCallPart,
    )
    from agentgen.runtime.messages import (
        ToolResultPart as ToolResultPart,
    )
    from agentgen.runtime.model_client import (
        AdvertisedTools as AdvertisedTools,
    )
    from agentgen.runtime.model_client import (
        IncompleteAnswerError as IncompleteAnswerError,
    )
    from agentgen.runtime.model_client import (
        ModelClient as ModelClient,
    )
    from agentgen.runtime.model_client import (
        ModelError as ModelError,
    )
    from agentgen.runtime.model_client import (
        ModelRequest as ModelRequest,
    )
    from agentgen.runtime.model_client import (
        ModelResponse as ModelResponse,
    )
    from agentgen.runtime.model_client import (
        RefusedAnswerError as RefusedAnswerError,
    )
    from agentgen.runtime.model_client import (
        ToolChoice as ToolChoice,
    )
    from agentgen.runtime.model_client import (
        ToolDefinition as ToolDefinition,
    )
    from agentgen.runtime.model_client import (
        ToolSearchUnsupportedError as ToolSearchUnsupportedError,
    )
    from agentgen.runtime.model_client import (
        Usage as Usage,
    )
    from agentgen.runtime.registry.client import (
        BatchResolver as BatchResolver,
    )
    from agentgen.runtime.registry.client import (
        CallOutcome as CallOutcome,
    )
    from agentgen.runtime.registry.client import (
        CallRef as CallRef,
    )
    from agentgen.runtime.registry.client import (
        RegistryClient as RegistryClient,
    )
    from agentgen.runtime.registry.client import (
        RegistryError as RegistryError,
    )
    from agentgen.runtime.registry.client import (
        ResolvedToolset as ResolvedToolset,
    )
    from agentgen.runtime.registry.client import (
        ResultStream as ResultStream,
    )
    from agentgen.runtime.registry.client import (
        ToolCallMeta as ToolCallMeta,
    )
    from agentgen.runtime.registry.http_client import (
        HttpRegistryClient as HttpRegistryClient,
    )
    from agentgen.runtime.registry.http_client import (
        HttpResultStream as HttpResultStream,
    )
    from agentgen.runtime.registry.http_client import (
        RegistryConnections as RegistryConnections,
    )
    from agentgen.runtime.registry.http_client import (
        connect_registries as connect_registries,
    )
    from agentgen.runtime.registry.http_client import (
        connect_registry as connect_registry,
    )
    from agentgen.runtime.registry.provider import (
        ProviderSetupError as ProviderSetupError,
    )
    from agentgen.runtime.registry.provider import (
        ServeOptions as ServeOptions,
    )
    from agentgen.runtime.registry.provider import (
        ServeReport as ServeReport,
    )
    from agentgen.runtime.registry.provider import (
        ToolOverloadedError as ToolOverloadedError,
    )
    from agentgen.runtime.registry.provider import (
        checked_implementation as checked_implementation,
    )
    from agentgen.runtime.registry.provider import (
        serve_toolset as serve_toolset,
    )
    from agentgen.runtime.runs.accepted import (
        AcceptedCall as AcceptedCall,
    )
    from agentgen.runtime.runs.accepted import (
        RegistryBinding as RegistryBinding,
    )
    from agentgen.runtime.runs.catalog import (
        CatalogError as CatalogError,
    )
    from agentgen.runtime.runs.catalog import (
        DuplicateToolError as DuplicateToolError,
    )
    from agentgen.runtime.runs.catalog import (
        OutsideConsumptionError as OutsideConsumptionError,
    )
    from agentgen.runtime.runs.catalog import (
        RegistryNotRegisteredError as RegistryNotRegisteredError,
    )
    from agentgen.runtime.runs.catalog import (
        RegistryReadError as RegistryReadError,
    )
    from agentgen.runtime.runs.catalog import (
        SourceNotFoundError as SourceNotFoundError,
    )
    from agentgen.runtime.runs.catalog import (
        SourceRemovedError as SourceRemovedError,
    )
    from agentgen.runtime.runs.catalog import (
        UnconfiguredAgentExecutorError as UnconfiguredAgentExecutorError,
    )
    from agentgen.runtime.runs.catalog import (
        VersionMismatchError as VersionMismatchError,
    )
    from agentgen.runtime.runs.confirmation import (
        ConfirmationBudgetError as ConfirmationBudgetError,
    )
    from agentgen.runtime.runs.confirmation import (
        ConfirmationError as ConfirmationError,
    )
    from agentgen.runtime.runs.confirmation import (
        ConfirmationRequest as ConfirmationRequest,
    )
    from agentgen.runtime.runs.confirmation import (
        Confirmer as Confirmer,
    )
    from agentgen.runtime.runs.host import RunHost as RunHost
    from agentgen.runtime.runs.requests import (
        MissingLabelsError as MissingLabelsError,
    )
    from agentgen.runtime.runs.requests import (
        ModelTimeoutError as ModelTimeoutError,
    )
    from agentgen.runtime.runs.requests import (
        RunError as RunError,
    )
    from agentgen.runtime.runs.requests import (
        RunOutcome as RunOutcome,
    )
    from agentgen.runtime.runs.requests import (
        RunRequest as RunRequest,
    )
    from agentgen.runtime.runs.requests import (
        ToolCallIdError as ToolCallIdError,
    )
    from agentgen.runtime.runs.requests import (
        run_usage as run_usage,
    )
    from agentgen.runtime.runs.steps import Verdict as Verdict
    from agentgen.runtime.search.document import SearchDocument as SearchDocument
    from agentgen.runtime.telemetry.config import Telemetry as Telemetry

__all__ = [
    "AcceptedCall",
    "AdvertisedTools",
    "AgentClient",
    "AgentDefinition",
    "AnthropicMessagesModel",
    "BatchResolver",
    "BedrockConverseModel",
    "BoundsSpec",
    "CallOutcome",
    "CallRef",
    "CatalogError",
    "ConfirmationBudgetError",
    "ConfirmationError",
    "ConfirmationRequest",
    "ConfirmationSpec",
    "Confirmer",
    "ContractError",
    "DefinitionError",
    "DuplicateToolError",
    "EmptyPayload",
    "EmptyRefusalError",
    "EmptyReplyError",
    "Engine",
    "FieldIssue",
    "HistoryReplayError",
    "HttpRegistryClient",
    "HttpResultStream",
    "InMemoryEngine",
    "IncompleteAnswerError",
    "InexactNumberError",
    "MCPAnswerLostError",
    "MCPCaller",
    "MCPCheckError",
    "MCPDeclaration",
    "MCPResultError",
    "MCPServerCheck",
    "MCPServerMismatch",
    "MCPToolError",
    "MCPToolProblem",
    "MCPToolsetExecutor",
    "Message",
    "MissingLabelsError",
    "MissingNamespaceHistoryError",
    "ModelClient",
    "ModelError",
    "ModelPlanner",
    "ModelRefusalError",
    "ModelRequest",
    "ModelResponse",
    "ModelTimeoutError",
    "OpenAIResponsesModel",
    "OutcomeUnknownError",
    "OutputBudgetError",
    "OutsideConsumptionError",
    "PagingSpec",
    "Part",
    "PayloadError",
    "PayloadTooLargeError",
    "PlanInput",
    "PlanResult",
    "PlanResumeInput",
    "Planner",
    "PlannerContext",
    "ProviderNameError",
    "ProviderSetupError",
    "RefusedAnswerError",
    "RegistrationClosedError",
    "RegistrationError",
    "RegistryBinding",
    "RegistryCatalog",
    "RegistryClient",
    "RegistryConnections",
    "RegistryError",
    "RegistryNotRegisteredError",
    "RegistryReadError",
    "RegistryTools",
    "ResolvedToolset",
    "ResultStream",
    "RunCancelledError",
    "RunContext",
    "RunError",
    "RunHost",
    "RunOutcome",
    "RunPolicy",
    "RunRequest",
    "Runtime",
    "SearchDocument",
    "ServeOptions",
    "ServeReport",
    "ServerDataSpec",
    "SessionCaller",
    "SourceNotFoundError",
    "SourceRemovedError",
    "SpecIndex",
    "TagClause",
    "Telemetry",
    "TemporalEngine",
    "TemporalSettings",
    "TextPart",
    "ToolCallIdError",
    "ToolCallMeta",
    "ToolCallPart",
    "ToolChoice",
    "ToolContext",
    "ToolDefinition",
    "ToolIdentityError",
    "ToolListChanges",
    "ToolOverloadedError",
    "ToolResultPart",
    "ToolSchema",
    "ToolSearchUnsupportedError",
    "ToolSpec",
    "ToolsetDeclaration",
    "ToolsetDeclarations",
    "ToolsetExecutor",
    "ToolsetText",
    "TypeSpec",
    "UnconfiguredAgentExecutorError",
    "UnknownToolError",
    "Usage",
    "Verdict",
    "VersionMismatchError",
    "adapters",
    "check_mcp_server",
    "checked_executor",
    "checked_implementation",
    "connect_registries",
    "connect_registry",
    "contracts",
    "empty_payload",
    "model_type",
    "null_result",
    "run_usage",
    "schema_type",
    "serve_toolset",
    "testing",
    "trace",
    "transcript",
]

_HOMES: dict[str, str] = {
    "AgentClient": "agentgen.runtime.app",
    "RegistrationClosedError": "agentgen.runtime.app",
    "RegistrationError": "agentgen.runtime.app",
    "Runtime": "agentgen.runtime.app",
    "checked_executor": "agentgen.runtime.app",
    "checked_implementation": "agentgen.runtime.registry.provider",
    "AgentDefinition": "agentgen.runtime.agents.definition",
    "DefinitionError": "agentgen.runtime.agents.definition",
    "RegistryCatalog": "agentgen.runtime.agents.definition",
    "RegistryTools": "agentgen.runtime.agents.definition",
    "RunPolicy": "agentgen.runtime.agents.definition",
    "TagClause": "agentgen.runtime.agents.definition",
    "OutcomeUnknownError": "agentgen.runtime.agents.executors",
    "ToolContext": "agentgen.runtime.agents.executors",
    "ToolsetExecutor": "agentgen.runtime.agents.executors",
    "UnknownToolError": "agentgen.runtime.agents.executors",
    "ModelPlanner": "agentgen.runtime.agents.model_planner",
    "PlanInput": "agentgen.runtime.agents.planning",
    "PlanResult": "agentgen.runtime.agents.planning",
    "PlanResumeInput": "agentgen.runtime.agents.planning",
    "Planner": "agentgen.runtime.agents.planning",
    "PlannerContext": "agentgen.runtime.agents.planning",
    "RunContext": "agentgen.runtime.agents.planning",
    "MissingLabelsError": "agentgen.runtime.runs.requests",
    "ModelTimeoutError": "agentgen.runtime.runs.requests",
    "RunError": "agentgen.runtime.runs.requests",
    "ToolCallIdError": "agentgen.runtime.runs.requests",
    "RunOutcome": "agentgen.runtime.runs.requests",
    "run_usage": "agentgen.runtime.runs.requests",
    "RunRequest": "agentgen.runtime.runs.requests",
    "AcceptedCall": "agentgen.runtime.runs.accepted",
    "RegistryBinding": "agentgen.runtime.runs.accepted",
    "CatalogError": "agentgen.runtime.runs.catalog",
    "DuplicateToolError": "agentgen.runtime.runs.catalog",
    "OutsideConsumptionError": "agentgen.runtime.runs.catalog",
    "RegistryNotRegisteredError": "agentgen.runtime.runs.catalog",
    "RegistryReadError": "agentgen.runtime.runs.catalog",
    "SourceNotFoundError": "agentgen.runtime.runs.catalog",
    "SourceRemovedError": "agentgen.runtime.runs.catalog",
    "UnconfiguredAgentExecutorError": "agentgen.runtime.runs.catalog",
    "VersionMismatchError": "agentgen.runtime.runs.catalog",
    "ConfirmationBudgetError": "agentgen.runtime.runs.confirmation",
    "ConfirmationError": "agentgen.runtime.runs.confirmation",
    "ConfirmationRequest": "agentgen.runtime.runs.confirmation",
    "Confirmer": "agentgen.runtime.runs.confirmation",
    "Verdict": "agentgen.runtime.runs.confirmation",
    "Telemetry": "agentgen.runtime.telemetry.config",
    "RunHost": "agentgen.runtime.runs.host",
    "Engine": "agentgen.runtime.engines.base",
    "InMemoryEngine": "agentgen.runtime.engines.memory",
    "RunCancelledError": "agentgen.runtime.engines.temporal.client",
    "PayloadTooLargeError": "agentgen.runtime.engines.temporal.payload_limits",
    "NamespaceNotFoundError": "agentgen.runtime.engines.temporal.namespaces",
    "TemporalEngine": "agentgen.runtime.engines.temporal.client",
    "TemporalSettings": "agentgen.runtime.engines.temporal.settings",
    "Message": "agentgen.runtime.messages",
    "Part": "agentgen.runtime.messages",
    "TextPart": "agentgen.runtime.messages",
    "ToolCallPart": "agentgen.runtime.messages",
    "ToolResultPart": "agentgen.runtime.messages",
    "ModelClient": "agentgen.runtime.model_client",
    "AdvertisedTools": "agentgen.runtime.model_client",
    "ModelError": "agentgen.runtime.model_client",
    "IncompleteAnswerError": "agentgen.runtime.model_client",
    "RefusedAnswerError": "agentgen.runtime.model_client",
    "ModelRequest": "agentgen.runtime.model_client",
    "ModelResponse": "agentgen.runtime.model_client",
    "ToolChoice": "agentgen.runtime.model_client",
    "ToolDefinition": "agentgen.runtime.model_client",
    "ToolSearchUnsupportedError": "agentgen.runtime.model_client",
    "Usage": "agentgen.runtime.model_client",
    "BatchResolver": "agentgen.runtime.registry.client",
    "CallOutcome": "agentgen.runtime.registry.client",
    "CallRef": "agentgen.runtime.registry.client",
    "RegistryClient": "agentgen.runtime.registry.client",
    "RegistryError": "agentgen.runtime.registry.client",
    "ResolvedToolset": "agentgen.runtime.registry.client",
    "ResultStream": "agentgen.runtime.registry.client",
    "ToolCallMeta": "agentgen.runtime.registry.client",
    "HttpRegistryClient": "agentgen.runtime.registry.http_client",
    "HttpResultStream": "agentgen.runtime.registry.http_client",
    "RegistryConnections": "agentgen.runtime.registry.http_client",
    "connect_registries": "agentgen.runtime.registry.http_client",
    "connect_registry": "agentgen.runtime.registry.http_client",
    "ProviderSetupError": "agentgen.runtime.registry.provider",
    "ServeOptions": "agentgen.runtime.registry.provider",
    "ServeReport": "agentgen.runtime.registry.provider",
    "ToolOverloadedError": "agentgen.runtime.registry.provider",
    "serve_toolset": "agentgen.runtime.registry.provider",
    "ContractError": "agentgen.runtime.contracts.declarations",
    "ToolSchema": "agentgen.runtime.contracts.declarations",
    "ToolsetDeclaration": "agentgen.runtime.contracts.declarations",
    "FieldIssue": "agentgen.runtime.contracts.codecs",
    "PayloadError": "agentgen.runtime.contracts.codecs",
    "EmptyPayload": "agentgen.runtime.contracts.schemas",
    "BoundsSpec": "agentgen.runtime.contracts.specs",
    "ConfirmationSpec": "agentgen.runtime.contracts.specs",
    "PagingSpec": "agentgen.runtime.contracts.specs",
    "ServerDataSpec": "agentgen.runtime.contracts.specs",
    "SpecIndex": "agentgen.runtime.contracts.specs",
    "ToolSpec": "agentgen.runtime.contracts.specs",
    "TypeSpec": "agentgen.runtime.contracts.specs",
    "empty_payload": "agentgen.runtime.contracts.specs",
    "model_type": "agentgen.runtime.contracts.specs",
    "null_result": "agentgen.runtime.contracts.specs",
    "schema_type": "agentgen.runtime.contracts.specs",
    "ToolsetDeclarations": "agentgen.runtime.contracts.wire",
    "ToolsetText": "agentgen.runtime.contracts.toolset_text",
    "SearchDocument": "agentgen.runtime.search.document",
    "InexactNumberError": "agentgen.runtime.mcp",
    "MCPAnswerLostError": "agentgen.runtime.mcp",
    "MCPCaller": "agentgen.runtime.mcp",
    "MCPResultError": "agentgen.runtime.mcp",
    "MCPToolError": "agentgen.runtime.mcp",
    "MCPToolsetExecutor": "agentgen.runtime.mcp",
    "SessionCaller": "agentgen.runtime.mcp",
    "ToolListChanges": "agentgen.runtime.mcp_changes",
    "MCPCheckError": "agentgen.runtime.mcp_check",
    "MCPDeclaration": "agentgen.runtime.mcp_check",
    "MCPServerCheck": "agentgen.runtime.mcp_check",
    "MCPServerMismatch": "agentgen.runtime.mcp_check",
    "MCPToolProblem": "agentgen.runtime.mcp_check",
    "check_mcp_server": "agentgen.runtime.mcp_check",
    "AnthropicMessagesModel": "agentgen.runtime.adapters",
    "BedrockConverseModel": "agentgen.runtime.adapters",
    "HistoryReplayError": "agentgen.runtime.adapters",
    "MissingNamespaceHistoryError": "agentgen.runtime.adapters",
    "OpenAIResponsesModel": "agentgen.runtime.adapters",
    "OutputBudgetError": "agentgen.runtime.adapters",
    "EmptyReplyError": "agentgen.runtime.adapters",
    "EmptyRefusalError": "agentgen.runtime.adapters",
    "ModelRefusalError": "agentgen.runtime.adapters",
    "ProviderNameError": "agentgen.runtime.adapters",
    "ToolIdentityError": "agentgen.runtime.adapters",
}
_MODULES = frozenset({"adapters", "contracts", "testing", "trace", "transcript"})

__getattr__, __dir__ = lazy_names(
    __name__, _HOMES, __all__, submodules=_MODULES, namespace=globals()
)
