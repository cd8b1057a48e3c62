"""Requests over large catalogs: what adapters derive from a catalog is computed once, and a
search loads only its hits."""

from __future__ import annotations

from typing import Any

import pytest

from agentgen.runtime.adapters import OpenAIResponsesModel, ProviderNameError
from agentgen.runtime.adapters import openai_responses as openai_module
from agentgen.runtime.adapters.names import NameTable, shared_table
from agentgen.runtime.adapters.selection import select_tools
from agentgen.runtime.model_client import AdvertisedTools, ModelError
from tests.adapters.fakes import function_call, openai_client, openai_server, response, search_call
from tests.adapters.fakes import text as reply_text
from tests.adapters.tools import CATALOG, request, tool

MANY = AdvertisedTools(
    [
        *CATALOG,
        *(
            tool(f"inventory.item_{i}", f"Count stock of item {i} in a warehouse.", deferred=True)
            for i in range(200)
        ),
    ]
)


def adapter(server: Any) -> OpenAIResponsesModel:
    return OpenAIResponsesModel(openai_client(server))


def test_derived_facts_are_computed_once_per_catalog() -> None:
    calls: list[int] = []

    def count(tools: AdvertisedTools) -> int:
        calls.append(1)
        return len(tools)

    tools = AdvertisedTools(CATALOG)
    assert tools.derived("n", count) == tools.derived("n", count) == len(CATALOG)
    assert calls == [1]
    assert tools == CATALOG  # still the sequence it was made from


def test_selection_and_names_are_shared_by_every_request_over_a_catalog() -> None:
    first = select_tools("openai", request(tools=MANY))
    again = select_tools("openai", request(tools=MANY))
    assert first.deferred is again.deferred and first.by_id is again.by_id
    assert shared_table(MANY) is shared_table(MANY)
    assert shared_table(CATALOG) is None  # a plain tuple: computed per request
    assert [t.id for t in first.deferred] == [t.id for t in MANY if t.deferred]


@pytest.mark.parametrize("tools", [AdvertisedTools, tuple])
async def test_a_collision_in_a_shared_catalog_is_refused_on_every_request(tools: Any) -> None:
    catalog = tools((tool("a.b_c", "One."), tool("a_b.c", "Two.", deferred=True)))
    assert isinstance(NameTable.of(t.id for t in catalog).collision, tuple)
    server = openai_server()
    for _ in range(2):
        with pytest.raises(ProviderNameError, match=r"'a\.b_c' and 'a_b\.c'.*'a_b_c'"):
            await adapter(server).complete(request(tools=catalog))
    assert server.bodies == []


async def test_a_repeated_tool_in_a_shared_catalog_is_refused() -> None:
    catalog = AdvertisedTools((CATALOG[0], CATALOG[0]))
    with pytest.raises(ModelError, match="twice"):
        await adapter(openai_server()).complete(request(tools=catalog))


async def test_a_search_loads_only_its_hits(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []
    real = openai_module.namespace_tool

    def counted(definition: Any, name: str) -> dict[str, Any]:
        made.append(definition.id)
        return real(definition, name)

    monkeypatch.setattr(openai_module, "namespace_tool", counted)
    server = openai_server(
        response(reply_text("Nothing to do.")),
        response(search_call("s1", "item 7 stock warehouse"), output_tokens=10),
        response(function_call("c1", "inventory_item_7", "{}", "inventory_item_7")),
    )
    model = adapter(server)
    await model.complete(request(tools=MANY))
    assert made == []  # the first request sends no deferred definition and makes none
    reply = await model.complete(request(tools=MANY))
    assert reply.message.tool_calls()[0].tool_id == "inventory.item_7"
    loaded = [entry["name"] for entry in server.bodies[2]["input"][-1]["tools"]]
    assert sorted(made) == sorted(name.replace("_", ".", 1) for name in loaded)
    assert len(made) <= 5 < len(MANY)
