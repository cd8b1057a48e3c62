"""SPEC G4–G6 with a client that resolves in batches (``BatchResolver``): a whole-registry read
is one request, gives the same catalog as a listing and one resolve per toolset, and fails the
same explicit ways."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from agentgen.runtime.registry.client import BatchResolver, RegistryError, ResolvedToolset
from agentgen.runtime.runs.catalog import RegistryReadError, SourceRemovedError
from tests.runtime.agents import (
    ScriptedPlanner,
    Sources,
    answer,
    calls,
    echo_handler,
    provider_toolset,
    records_definition,
    registry_runtime,
)
from tests.runtime.fake_registry import FakeRegistry

WHOLE = Sources(registries=[("company", False)])


@dataclass
class Batching(FakeRegistry):
    """A FakeRegistry that also resolves many toolsets in one request."""

    batches: list[Sequence[str] | None] = field(default_factory=list)
    #: Per toolset, what the batch answers instead of its resolution.
    answer_instead: dict[str, Any] = field(default_factory=dict)
    reply: Any = None
    hang: bool = False

    async def resolve_toolsets(
        self, names: Sequence[str] | None = None
    ) -> list[tuple[str, ResolvedToolset | RegistryError]]:
        self.batches.append(names)
        if self.hang:
            await asyncio.Event().wait()
        if self.reply is not None:
            return self.reply  # type: ignore[no-any-return]
        found: list[tuple[str, ResolvedToolset | RegistryError]] = []
        for name in sorted(self.admissions) if names is None else names:
            if name in self.answer_instead:
                found.append((name, self.answer_instead[name]))
                continue
            admission = self.admissions[name]
            declaration = type(admission.declaration).model_validate(
                admission.declaration.to_json()
            )
            found.append((name, ResolvedToolset(declaration, admission.token)))
        return found


async def run(registry: FakeRegistry, planner: ScriptedPlanner | None = None) -> Any:
    rt, _ = registry_runtime(registry)
    definition = records_definition(id="test.dyn", specs=(), deferred_tool_ids=())
    rt.register_agent(
        definition.with_registry_tools(WHOLE),
        planner=planner or ScriptedPlanner([answer()]),
        executors={},
    )
    return await asyncio.wait_for(rt.client("test.dyn").run("go"), 30)


def published(registry: FakeRegistry) -> FakeRegistry:
    registry.publish(provider_toolset(), echo_handler)
    registry.publish(provider_toolset("billing"), echo_handler)
    return registry


async def test_a_whole_registry_read_is_one_batch_request_with_the_same_catalog() -> None:
    batching = published(Batching())
    assert isinstance(batching, BatchResolver) and not isinstance(FakeRegistry(), BatchResolver)
    seen_batched = ScriptedPlanner([calls(("billing.lookup", {"id": "7"})), answer()])
    outcome = await run(batching, seen_batched)
    # Two planning activities: each read the registry once, in one request.
    assert batching.batches == [None, None]
    assert (batching.lists, batching.resolves) == (0, [])
    assert outcome.tool_calls == 1 and batching.calls[0][0] == "billing.lookup"

    plain = published(FakeRegistry())
    seen_plain = ScriptedPlanner([calls(("billing.lookup", {"id": "7"})), answer()])
    await run(plain, seen_plain)
    assert plain.lists == 2  # the other path: a listing and one resolve per toolset
    for batched, listed in zip(seen_batched.seen, seen_plain.seen, strict=True):
        assert batched == listed


async def test_a_toolset_the_batch_no_longer_finds_is_a_removed_source() -> None:
    batching = published(Batching())
    batching.answer_instead["billing"] = RegistryError("not_found", 'toolset "billing" not found')
    with pytest.raises(SourceRemovedError, match="toolset 'billing' was removed"):
        await run(batching)


async def test_a_toolset_the_batch_could_not_read_fails_the_activity() -> None:
    batching = published(Batching())
    batching.answer_instead["records"] = RegistryError("service_unavailable", "down")
    with pytest.raises(
        RegistryReadError, match="resolve registry 'company' toolset 'records': service_unavail"
    ):
        await run(batching)


@pytest.mark.parametrize(
    ("reply", "fragment"),
    [
        ({"records": None}, "instead of a list of (toolset name, resolution) pairs"),
        ([("records",)], "instead of a list of (toolset name, resolution) pairs"),
        ([("records", None), ("records", None)], "resolved a toolset twice"),
    ],
    ids=["mapping", "short-pair", "twice"],
)
async def test_malformed_batch_replies_are_typed_errors(reply: Any, fragment: str) -> None:
    batching = published(Batching())
    batching.reply = reply
    with pytest.raises(RegistryReadError, match="read registry 'company'") as info:
        await run(batching)
    assert fragment in str(info.value)


async def test_a_malformed_resolution_inside_a_batch_names_its_toolset() -> None:
    batching = published(Batching())
    batching.answer_instead["records"] = {"toolset": "records"}
    with pytest.raises(
        RegistryReadError, match="resolve registry 'company' toolset 'records': .*dict"
    ):
        await run(batching)


async def test_the_design_timeout_bounds_a_batch_read() -> None:
    from agentgen.runtime import Runtime
    from examples.company.gen.registries import RegistrySettings

    batching = published(Batching(hang=True))
    rt = Runtime()
    settings = RegistrySettings("company", "https://registry.example", "v1", timeout=0.05)
    rt.register_registry("company", batching, batching, settings=settings)
    definition = records_definition(id="test.dyn", specs=(), deferred_tool_ids=())
    rt.register_agent(
        definition.with_registry_tools(WHOLE), planner=ScriptedPlanner([answer()]), executors={}
    )
    with pytest.raises(RegistryReadError, match="timed out after 0.05 s"):
        await asyncio.wait_for(rt.client("test.dyn").run("go"), 30)


class Unreachable(Batching):
    async def resolve_toolsets(self, names: Sequence[str] | None = None) -> Any:
        raise ConnectionRefusedError(111, "Connection refused")


@pytest.mark.parametrize(
    ("registry", "transient"),
    [
        (Unreachable(), True),
        (Batching(answer_instead={"records": RegistryError("service_unavailable", "busy")}), True),
        (Batching(answer_instead={"records": RegistryError("validation_error", "bad")}), False),
        (Batching(reply=42), False),
    ],
    ids=["unreachable", "unavailable-entry", "refused-entry", "malformed"],
)
async def test_batch_read_errors_say_whether_the_registry_did_not_answer(
    registry: Batching, transient: bool
) -> None:
    """As with single reads: a durable engine retries only what may succeed when repeated."""
    published(registry)
    with pytest.raises(RegistryReadError) as info:
        await run(registry)
    assert info.value.transient is transient
