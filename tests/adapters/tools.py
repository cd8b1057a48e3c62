"""Tool definitions as a planner would pass them: IDs, schemas and precomputed search words."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from agentgen.runtime.contracts.ids import humanize_title
from agentgen.runtime.messages import Message
from agentgen.runtime.model_client import ModelRequest, ToolChoice, ToolDefinition
from agentgen.runtime.search.document import search_document


def tool(
    tool_id: str,
    description: str,
    properties: dict[str, Any] | None = None,
    *,
    deferred: bool = False,
) -> ToolDefinition:
    properties = properties or {}
    schema = {
        "type": "object",
        "properties": properties,
        "required": sorted(properties),
        "additionalProperties": False,
    }
    title = humanize_title(tool_id)
    return ToolDefinition(
        id=tool_id,
        title=title,
        description=description,
        parameters_json=json.dumps(schema),
        search=search_document(tool_id, title, description, schema),
        deferred=deferred,
    )


def deferred(definition: ToolDefinition, value: bool = True) -> ToolDefinition:
    return replace(definition, deferred=value)


RECORDS = tool("records.search", "Search customer records by name.", {"name": {"type": "string"}})
WEATHER = tool(
    "weather.lookup",
    "Weather forecasts for a city.",
    {"city": {"type": "string"}},
    deferred=True,
)
ALERTS = tool(
    "weather.alerts",
    "Severe weather alerts for a region.",
    {"region": {"type": "string"}},
    deferred=True,
)
INVOICE = tool(
    "billing.invoice",
    "Create an invoice for a customer.",
    {"customer": {"type": "string"}},
    deferred=True,
)
CATALOG = (RECORDS, WEATHER, ALERTS, INVOICE)


def request(
    *messages: Message,
    tools: tuple[ToolDefinition, ...] = CATALOG,
    choice: ToolChoice | None = None,
    max_tokens: int | None = 1000,
    model: str = "gpt-5.4",
    system: str | None = None,
) -> ModelRequest:
    return ModelRequest(
        model=model,
        messages=messages or (Message.user("What is the weather in Paris?"),),
        tools=tools,
        tool_choice=choice or ToolChoice(),
        max_tokens=max_tokens,
        system=system,
    )
