"""A consumer agent that calls another agent exposed as a tool (``ask_expert.ask``)."""

from __future__ import annotations

import json

from agentgen.runtime.agents.definition import AgentDefinition
from agentgen.runtime.contracts.specs import ToolSpec, schema_type
from agentgen.runtime.search.document import search_document

QUESTION = {
    "type": "object",
    "properties": {"question": {"type": "string"}},
    "required": ["question"],
    "additionalProperties": False,
}
ANSWER = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}

ASK = ToolSpec(
    id="ask_expert.ask",
    toolset="helpdesk.ask_expert",
    title="Ask",
    description="Ask the expert a question.",
    payload=schema_type(json.dumps(QUESTION), "ask_expert.ask payload"),
    result=schema_type(json.dumps(ANSWER), "ask_expert.ask result"),
    search=search_document("ask_expert.ask", "Ask", "Ask the expert a question.", QUESTION),
    kind="agent",
    agent_id="helpdesk.expert",
)


def expert_definition() -> AgentDefinition:
    return AgentDefinition(id="helpdesk.expert", description="Answers hard questions.", specs=())


def triage_definition() -> AgentDefinition:
    return AgentDefinition(
        id="helpdesk.triage",
        description="Triages.",
        specs=(ASK,),
        agent_executors=("helpdesk.expert",),
    )
