"""The application of the crash test: one factory for the test's client and every worker.

``agentgen worker --app tests.engines.crash_app:build`` runs it in worker processes; the test
calls :func:`build` itself to start runs and wait for them. Where things are comes from the
environment (the registry service's URL, the provider endpoint's, the Temporal address, the
task queue).

The agent pays through a registry tool (``ledger.pay``, which the test's provider serves
through the registry service, reached with the registry's HTTP client) or charges through a
compiled tool (``till.charge``, whose executor calls the test's provider endpoint); its model
calls the tool the user names, then answers with the result.
"""

from __future__ import annotations

import json
import os
from typing import Any

from agentgen.runtime.agents.definition import AgentDefinition
from agentgen.runtime.agents.executors import ToolContext
from agentgen.runtime.agents.model_planner import ModelPlanner
from agentgen.runtime.app import Runtime
from agentgen.runtime.contracts.declarations import ToolsetDeclaration
from agentgen.runtime.contracts.specs import ToolSpec, schema_type
from agentgen.runtime.contracts.wire import tool_schema
from agentgen.runtime.engines.temporal import TemporalEngine, TemporalSettings
from agentgen.runtime.model_client import ModelRequest
from agentgen.runtime.registry.http_client import HttpRegistryClient, HttpResultStream
from agentgen.runtime.search.document import search_document
from agentgen.runtime.testing import Answer, Call, FunctionModel
from tests.engines.held_provider import charge
from tests.runtime.agents import Sources

AMOUNT = {
    "type": "object",
    "properties": {"amount": {"type": "integer"}},
    "required": ["amount"],
    "additionalProperties": False,
}
CHARGED = {
    "type": "object",
    "properties": {"charged": {"type": "integer"}},
    "required": ["charged"],
    "additionalProperties": False,
}
RECEIPT = {
    "type": "object",
    "properties": {"receipt": {"type": "string"}},
    "required": ["receipt"],
    "additionalProperties": False,
}

#: A lost worker is noticed after 2 s without a heartbeat.
SETTINGS = TemporalSettings(heartbeat_timeout=2.0, retry_initial_interval=0.2)


def charged(amount: int) -> dict[str, Any]:
    """The first revision's answer (:data:`CHARGED`)."""
    return {"charged": amount}


def receipt(amount: int) -> dict[str, Any]:
    """The replacement revision's answer (:data:`RECEIPT`)."""
    return {"receipt": f"paid {amount}"}


def ledger(result: dict[str, Any], revision: str = "v1") -> ToolsetDeclaration:
    """The provider's toolset; a new ``revision`` with another result contract replaces it."""
    return ToolsetDeclaration(
        name="ledger",
        version="1",
        description=f"ledger {revision}",
        tools=[
            tool_schema(
                tool_id="ledger.pay",
                title="Pay",
                description=f"Pay an amount ({revision}).",
                tags=(),
                payload_schema=AMOUNT,
                payload_name=None,
                result_schema=result,
                result_name=None,
                search=search_document("ledger.pay", "Pay", "Pay an amount.", AMOUNT),
            )
        ],
    )


CHARGE = ToolSpec(
    id="till.charge",
    toolset="crash.till",
    title="Charge",
    description="Charge an amount.",
    payload=schema_type(json.dumps(AMOUNT), "till.charge payload"),
    result=schema_type(json.dumps(CHARGED), "till.charge result"),
    search=search_document("till.charge", "Charge", "Charge an amount.", AMOUNT),
)


class Till:
    def __init__(self, provider_url: str) -> None:
        self.provider_url = provider_url

    async def execute(self, tool_id: str, payload: Any, context: ToolContext) -> Any:
        return await charge(self.provider_url, payload["amount"])


def plan(request: ModelRequest) -> Call | Answer:
    last = request.messages[-1]
    if last.role == "tool":
        return Answer(f"result: {last.parts[0].content}")  # type: ignore[union-attr]
    tool = "ledger.pay" if "pay" in last.text else "till.charge"
    return Call(tool, {"amount": 5}, call_id="call-1")


def build() -> Runtime:
    registry = HttpRegistryClient(os.environ["AGENTGEN_CRASH_REGISTRY"])
    engine = TemporalEngine(
        address=os.environ["AGENTGEN_CRASH_TEMPORAL"],
        task_queue=os.environ["AGENTGEN_CRASH_QUEUE"],
        settings=SETTINGS,
    )
    rt = Runtime(engine=engine)
    rt.register_registry("company", registry, HttpResultStream(registry, poll_ms=2_000))
    rt.register_model("scripted", FunctionModel(plan))
    definition = AgentDefinition(
        id="crash.payer",
        description="Pays and charges.",
        specs=(CHARGE,),
        registries=("company",),
    ).with_registry_tools(Sources(toolsets=[("company", "ledger", "", False)]))
    till = Till(os.environ["AGENTGEN_CRASH_PROVIDER"])
    rt.register_agent(definition, planner=ModelPlanner("scripted"), executors={"crash.till": till})
    return rt


APP = "tests.engines.crash_app:build"
