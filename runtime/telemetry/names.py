"""The names agentgen's spans, attributes and metrics carry.

``gen_ai.*`` names are the OpenTelemetry GenAI semantic conventions' (as of semantic conventions
1.41, the attribute set of ``opentelemetry-semantic-conventions`` 0.66b2: the provider is
``gen_ai.provider.name``, which replaced ``gen_ai.system``); ``error.type`` is the general
convention's. Everything agentgen adds is under ``agentgen.``. Kept here, as plain strings, so
that the library depends on the OpenTelemetry API alone; ``tests/telemetry`` checks every
``gen_ai.*`` name against the installed semantic-conventions package.
"""

from __future__ import annotations

__all__ = [
    "AGENT_ID",
    "AGENT_NAME",
    "CALL_ARGUMENTS",
    "CALL_RESULT",
    "CATALOG_BUILD_DURATION",
    "CONFIRMATION_DECIDED_BY",
    "CONFIRMATION_OUTCOME",
    "CONFIRMATION_PROMPT",
    "CONVERSATION_ID",
    "ENGINE",
    "ERROR_TYPE",
    "FINISH_REASONS",
    "INPUT_TOKENS",
    "METRICS",
    "OPERATION",
    "OPERATION_DURATION",
    "OUTCOME",
    "OUTPUT_TOKENS",
    "PARENT_RUN_ID",
    "PARENT_TOOL_CALL_ID",
    "PLAN_ACCEPTED",
    "PLAN_ACTIVITY",
    "PLAN_CALLS",
    "PLAN_DEFERRED_TOOLS",
    "PLAN_KIND",
    "PLAN_SEARCH_ROUNDS",
    "PLAN_TOOLS",
    "PROVIDER",
    "REGISTRY",
    "REGISTRY_ATTEMPTS",
    "REGISTRY_CALL_DEPTH",
    "REGISTRY_OPERATION",
    "REGISTRY_REQUEST_DURATION",
    "REGISTRY_TOKEN",
    "REGISTRY_TOOL",
    "REGISTRY_TOOLSET",
    "REGISTRY_VERSION",
    "REQUEST_MAX_TOKENS",
    "REQUEST_MODEL",
    "RESPONSE_ID",
    "RESPONSE_MODEL",
    "RUN_CALL_DEPTH",
    "RUN_CHILD_RUNS",
    "RUN_ID",
    "RUN_TOOL_CALLS",
    "SEARCH_EXECUTED_BY",
    "SEARCH_HITS",
    "SEARCH_LOADED",
    "SEARCH_QUERY",
    "SEARCH_RANKING",
    "SEARCH_ROUNDS",
    "SEARCH_SCORES",
    "TOKEN_TYPE",
    "TOKEN_USAGE",
    "TOOLS_LOADED",
    "TOOL_CALLS",
    "TOOL_CALL_ID",
    "TOOL_NAME",
    "TOOL_OUTCOME",
    "TOOL_ROUTE",
    "TOOL_TOOLSET",
    "TOOL_TYPE",
    "UNREPORTED_USAGE",
    "USAGE_UNREPORTED",
]

# --- GenAI semantic conventions --------------------------------------------------------------

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
AGENT_ID = "gen_ai.agent.id"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION_ID = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
RESPONSE_ID = "gen_ai.response.id"
RESPONSE_MODEL = "gen_ai.response.model"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
TOKEN_TYPE = "gen_ai.token.type"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
#: Opt-in (``capture_payloads``): the call's arguments and result as JSON text.
CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
CALL_RESULT = "gen_ai.tool.call.result"
ERROR_TYPE = "error.type"

#: Metrics of the GenAI conventions.
TOKEN_USAGE = "gen_ai.client.token.usage"
OPERATION_DURATION = "gen_ai.client.operation.duration"

# --- agentgen --------------------------------------------------------------------------------

RUN_ID = "agentgen.run.id"
PARENT_RUN_ID = "agentgen.parent_run.id"
PARENT_TOOL_CALL_ID = "agentgen.parent_tool_call.id"
ENGINE = "agentgen.engine"
#: How an operation ended when that is neither a success nor a failure: ``cancelled`` (its
#: caller withdrew it), on its span (whose status stays unset) and on its duration metric
#: (which then has no ``error.type``).
OUTCOME = "agentgen.outcome"
RUN_TOOL_CALLS = "agentgen.run.tool_calls"
RUN_CHILD_RUNS = "agentgen.run.child_runs"
#: How many registry calls a run is nested in (``RunRequest.call_depth``), when not 0: a run
#: an agent published as a registry tool started while serving a call.
RUN_CALL_DEPTH = "agentgen.run.call_depth"
#: On a model call's span: how many of its provider responses reported no usage (its token
#: attributes are then left out: the call's count is not known).
USAGE_UNREPORTED = "agentgen.usage.unreported_responses"

PLAN_ACTIVITY = "agentgen.plan.activity"
PLAN_KIND = "agentgen.plan.kind"
PLAN_TOOLS = "agentgen.plan.tools"
PLAN_DEFERRED_TOOLS = "agentgen.plan.deferred_tools"
PLAN_CALLS = "agentgen.plan.calls"
PLAN_ACCEPTED = "agentgen.plan.accepted"
PLAN_SEARCH_ROUNDS = "agentgen.plan.search_rounds"

SEARCH_QUERY = "agentgen.search.query"
SEARCH_HITS = "agentgen.search.hits"
SEARCH_SCORES = "agentgen.search.scores"
SEARCH_LOADED = "agentgen.search.loaded"
SEARCH_EXECUTED_BY = "agentgen.search.executed_by"
SEARCH_RANKING = "agentgen.search.ranking"

TOOL_OUTCOME = "agentgen.tool.outcome"
TOOL_ROUTE = "agentgen.tool.route"
TOOL_TOOLSET = "agentgen.tool.toolset"

CONFIRMATION_OUTCOME = "agentgen.confirmation.outcome"
CONFIRMATION_DECIDED_BY = "agentgen.confirmation.decided_by"
#: Opt-in (``capture_payloads``): the prompt rendered from the call's arguments.
CONFIRMATION_PROMPT = "agentgen.confirmation.prompt"

REGISTRY = "agentgen.registry.name"
REGISTRY_OPERATION = "agentgen.registry.operation"
REGISTRY_TOOLSET = "agentgen.registry.toolset"
REGISTRY_TOOL = "agentgen.registry.tool"
REGISTRY_VERSION = "agentgen.registry.version"
REGISTRY_TOKEN = "agentgen.registry.token"
REGISTRY_ATTEMPTS = "agentgen.registry.attempts"
#: On a registry call's span: the ``meta.call_depth`` it was sent with, when not 0.
REGISTRY_CALL_DEPTH = "agentgen.registry.call_depth"

#: agentgen's metrics.
TOOLS_LOADED = "agentgen.run.tools_loaded"
SEARCH_ROUNDS = "agentgen.plan.search_rounds"
TOOL_CALLS = "agentgen.tool.calls"
UNREPORTED_USAGE = "agentgen.client.usage.unreported"
REGISTRY_REQUEST_DURATION = "agentgen.registry.request.duration"
CATALOG_BUILD_DURATION = "agentgen.catalog.build.duration"

#: Every metric agentgen records (``instruments`` creates one instrument each): the names
#: ``TelemetryRecorder.metric`` reads, so that a misspelt one is refused rather than read as a
#: metric with no points.
METRICS = (
    TOKEN_USAGE,
    OPERATION_DURATION,
    TOOLS_LOADED,
    SEARCH_ROUNDS,
    UNREPORTED_USAGE,
    TOOL_CALLS,
    REGISTRY_REQUEST_DURATION,
    CATALOG_BUILD_DURATION,
)
