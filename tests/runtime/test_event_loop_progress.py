"""Bad input from a registry or a model never stalls the other runs (SPEC L5).

Ten runs make tool calls continuously while another run is handed, again and again, a 1 MB
registry schema, a ReDoS pattern with a model-chosen string, or a confirmation template built
to loop. The test measures the ten runs' progress: completed tool calls in every 100 ms window
of the event loop's own CPU time while the bad input is being handled. CPU time of the loop's
thread, not wall time: a loop stuck in a long computation spends CPU without progress, while a
machine busy with other work only pauses both. The objects that exist before the measurement
(the whole test session's, the bad input's) are frozen out of the garbage collector, whose full
collections over them would pause every run alike, bad input or not.
"""

from __future__ import annotations

import asyncio
import gc
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from agentgen.runtime.agents.planning import PlanInput, PlanResult, PlanResumeInput
from agentgen.runtime.app import Runtime
from agentgen.runtime.contracts.declarations import ToolsetDeclaration
from agentgen.runtime.contracts.fingerprint import registration_token
from agentgen.runtime.contracts.specs import ConfirmationSpec
from agentgen.runtime.contracts.wire import fingerprint, tool_schema
from agentgen.runtime.messages import Message, TextPart, ToolCallPart
from agentgen.runtime.registry.client import CallOutcome, CallRef, ResolvedToolset
from agentgen.runtime.runs.catalog import RegistryReadError
from agentgen.runtime.runs.confirmation import ConfirmationRequest
from agentgen.runtime.search.document import SearchDocument
from examples.records.gen.assistant.toolsets.records import executor as records_executor
from examples.records.gen.assistant.toolsets.records import specs as records_specs
from tests.runtime.agents import Records, Sources, records_definition

WINDOW = 0.1  # seconds of the event loop thread's CPU time
BAD_PHASE = 0.6  # at least this much loop CPU time is spent handling bad input
GOOD_RUNS = 10


@dataclass
class Progress:
    """Loop-thread CPU timestamps of every completed call of the good runs."""

    done: list[float] = field(default_factory=list)
    stop: bool = False


class Looping:
    """A planner that calls a tool on every turn until told to stop."""

    def __init__(self, progress: Progress, name: str) -> None:
        self.progress = progress
        self.name = name
        self.turn = 0

    async def plan_start(self, input: PlanInput) -> PlanResult:
        return await self._next()

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        if input.tool_results and not input.tool_results[0].is_error:
            self.progress.done.append(time.thread_time())
        return await self._next()

    async def _next(self) -> PlanResult:
        await asyncio.sleep(0)
        if self.progress.stop:
            return PlanResult(Message("assistant", (TextPart("done"),)))
        self.turn += 1
        call = ToolCallPart(f"{self.name}-{self.turn}", "records.lookup", '{"id":"1"}')
        return PlanResult(Message("assistant", (call,)))


class Calling:
    """A planner that makes one call with the bad arguments, then answers."""

    def __init__(self, tool: str, arguments: dict[str, Any]) -> None:
        self.call = ToolCallPart("bad-1", tool, json.dumps(arguments))
        self.results: list[Any] = []

    async def plan_start(self, input: PlanInput) -> PlanResult:
        return PlanResult(Message("assistant", (self.call,)))

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        self.results.extend(input.tool_results)
        return PlanResult(Message("assistant", (TextPart("done"),)))


class Registry:
    """Serves one prebuilt toolset (so the test measures the runtime, not a client's parsing)."""

    def __init__(self, toolset: ToolsetDeclaration) -> None:
        token = registration_token(fingerprint(toolset), "r1")
        self.resolved = ResolvedToolset(toolset, token)

    async def list_toolsets(self) -> list[str]:
        return [self.resolved.toolset.name]

    async def resolve_toolset(self, name: str) -> ResolvedToolset:
        return self.resolved

    async def call_resolved_tool(self, **kwargs: Any) -> CallRef:
        return CallRef("u", self.resolved.registration_token)

    async def retry_tool(self, ref: CallRef, **kwargs: Any) -> CallRef:
        return ref

    async def await_result(self, ref: CallRef) -> CallOutcome:
        return CallOutcome("completed", "{}")


def declaration(payload: dict[str, Any], **extra: Any) -> ToolsetDeclaration:
    tool = tool_schema(
        tool_id="bad.tool",
        title="Bad",
        description="A tool with bad input.",
        tags=(),
        payload_schema=payload,
        payload_name=None,
        result_schema={"type": "object"},
        result_name=None,
        search=SearchDocument.from_text("bad.tool bad"),
        **extra,
    )
    return ToolsetDeclaration(name="bad", tools=[tool])


def huge_schema() -> ToolsetDeclaration:
    properties = {
        f"field_{i:05d}": {"type": "string", "description": "x" * 40, "maxLength": 100}
        for i in range(12_000)
    }
    payload = {"type": "object", "properties": properties}
    assert len(json.dumps(payload)) > 1_000_000
    return ToolsetDeclaration.model_construct(
        name="bad", tools=[declaration({"type": "object"}).tools[0].model_copy(
            update={"payload_schema": payload, "execution_payload_schema": payload}
        )]
    )  # fmt: skip


REDOS = r"^([a-z0-9]+-?)*[a-z0-9]+\.example\.com$"
LOOP = "{% for i in range(3000) %}{% for j in range(3000) %}{{ j }}{% endfor %}{% endfor %}"


@dataclass
class Case:
    toolset: Callable[[], ToolsetDeclaration]
    #: The bad run's planner, and how to check that the bad input was refused.
    planner: Callable[[], Calling | None]
    refused: Callable[[Calling | None, BaseException | None], bool]


def _invalid_arguments(planner: Calling | None, error: BaseException | None) -> bool:
    assert planner is not None and error is None
    (result,) = planner.results
    return bool(json.loads(result.content)["error"]["kind"] == "invalid_arguments")


def _confirmation_failed(planner: Calling | None, error: BaseException | None) -> bool:
    assert planner is not None and error is None
    (result,) = planner.results
    return bool(json.loads(result.content)["error"]["kind"] == "confirmation_failed")


CASES = {
    "1MB-schema": Case(
        huge_schema,
        lambda: None,
        lambda planner, error: isinstance(error, RegistryReadError),
    ),
    "ReDoS-pattern": Case(
        lambda: declaration(
            {"type": "object", "properties": {"host": {"type": "string", "pattern": REDOS}}}
        ),
        lambda: Calling("bad.tool", {"host": "a" * 26 + "!"}),
        _invalid_arguments,
    ),
    "loop-template": Case(
        lambda: declaration(
            {"type": "object", "properties": {"n": {"type": "integer"}}},
            confirmation=ConfirmationSpec(LOOP, "Denied."),
        ),
        lambda: Calling("bad.tool", {"n": 1}),
        _confirmation_failed,
    ),
}


async def approve(request: ConfirmationRequest) -> bool:
    return True


@pytest.fixture
def frozen_heap() -> Iterator[None]:
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("case", sorted(CASES))
async def test_other_runs_keep_progressing_while_bad_input_is_handled(
    case: str, frozen_heap: None
) -> None:
    spec = CASES[case]
    progress = Progress()
    rt = Runtime(confirm=approve)
    registry = Registry(spec.toolset())
    rt.register_registry("company", registry, registry)
    gc.freeze()  # the bad input itself, built above
    for index in range(GOOD_RUNS):
        rt.register_agent(
            records_definition(id=f"test.good{index}"),
            planner=Looping(progress, f"g{index}"),
            executors={records_specs.TOOLSET: records_executor.bind(Records())},
        )
    planners: list[Calling | None] = []

    class BadPlanner:
        async def plan_start(self, input: PlanInput) -> PlanResult:
            planner = spec.planner()
            planners.append(planner)
            if planner is None:
                return PlanResult(Message("assistant", (TextPart("done"),)))
            self.current = planner
            return await planner.plan_start(input)

        async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
            return await self.current.plan_resume(input)

    sources = Sources(toolsets=[("company", "bad", "", False)])
    rt.register_agent(
        records_definition(id="test.bad", specs=(), deferred_tool_ids=()).with_registry_tools(
            sources
        ),
        planner=BadPlanner(),
        executors={},
    )
    good = [
        asyncio.create_task(rt.client(f"test.good{index}").run("go")) for index in range(GOOD_RUNS)
    ]
    while len(progress.done) < GOOD_RUNS:  # every good run is under way
        await asyncio.sleep(0)
    handled: list[tuple[Calling | None, BaseException | None]] = []

    async def bad_run() -> None:
        error: BaseException | None = None
        try:
            await rt.client("test.bad").run("go")
        except RegistryReadError as exc:
            error = exc
        handled.append((planners[-1] if planners else None, error))

    # One bad run before the measurement: what the first one does once per process (importing
    # the modules that check schemas, patterns and templates, filling their caches) depends
    # on which tests ran before, not on the bad input.
    await bad_run()
    started = time.thread_time()
    while time.thread_time() - started < BAD_PHASE or len(handled) < 6:
        await bad_run()
        await asyncio.sleep(0)
    ended = time.thread_time()
    progress.stop = True
    await asyncio.gather(*good)
    windows = int((ended - started) / WINDOW)
    counts = [
        sum(started + w * WINDOW <= t < started + (w + 1) * WINDOW for t in progress.done)
        for w in range(windows)
    ]
    assert windows >= 3, windows
    assert all(count > 0 for count in counts), counts
    # And every time, the bad input was refused with its typed error.
    assert all(spec.refused(planner, error) for planner, error in handled), handled
