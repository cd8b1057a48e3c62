"""The records example end to end on the in-memory engine: the model finds the deferred
``search`` tool by searching, the runtime executes it with the generated typed executor, and
the run ends with the model's answer."""

from __future__ import annotations

import json

from agentgen.runtime.agents.executors import ToolContext
from agentgen.runtime.agents.model_planner import ModelPlanner
from agentgen.runtime.app import Runtime
from agentgen.runtime.testing import METADATA_KEY, Answer, Call, ScriptedModel, Search
from examples.records.gen.assistant.agents import assistant as assistant_agent
from examples.records.gen.assistant.toolsets.records import types


class Records:
    """The application's implementation of the generated ``RecordsExecutor``."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    async def lookup(self, args: types.LookupArgs, context: ToolContext) -> types.Record:
        self.calls.append(("lookup", args))
        return types.Record(id=args.id, title="Tokyo", body="Sunny")

    async def search(self, args: types.SearchArgs, context: ToolContext) -> types.SearchResult:
        self.calls.append(("search", args))
        return types.SearchResult(ids=["r1", "r2"][: args.limit])

    async def analyze(self, args: types.AnalyzeArgs, context: ToolContext) -> types.Analysis:
        self.calls.append(("analyze", args))
        return types.Analysis(summary=f"{len(args.ids)} records")


async def test_deferred_tools_are_found_by_search_executed_and_answered() -> None:
    model = ScriptedModel(
        [
            Search("search records"),
            Call("records.search", {"query": "weather", "limit": 2}),
            Search("analyze"),
            Call("records.analyze", {"ids": ["r1", "r2"]}),
            Answer("Two records, both sunny."),
        ]
    )
    executor = Records()
    rt = Runtime()
    rt.register_model("scripted", model)
    assistant_agent.register_assistant_agent(
        rt,
        assistant_agent.AssistantAgentConfig(
            planner=ModelPlanner("scripted"), records_executor=executor
        ),
    )
    outcome = await assistant_agent.new_client(rt).run("What do the weather records say?")

    assert outcome.final_text == "Two records, both sunny."
    assert outcome.tool_calls == 2
    assert [name for name, _ in executor.calls] == ["search", "analyze"]
    assert model.searches[0] == ("search records", ["records.search", "records.analyze"])
    first = model.requests[0]
    assert {t.id: t.deferred for t in first.tools} == {
        "records.lookup": False,
        "records.search": True,
        "records.analyze": True,
    }
    roles = [m.role for m in outcome.transcript]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    search_result = outcome.transcript[2].parts[0]
    assert json.loads(search_result.content) == {"ids": ["r1", "r2"]}  # type: ignore[union-attr]
    assert outcome.transcript[1].metadata[METADATA_KEY][0]["query"] == "search records"
    assert rt.sealed
