"""Whatever a registry client returns, raises or fails to return, the run gets a typed error
naming the registry and toolset, and every registry request is bounded by the design's
``Timeout(...)`` (SPEC G6, L5)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import pytest

from agentgen.runtime.app import RegistrationError, Runtime
from agentgen.runtime.contracts import limits
from agentgen.runtime.contracts.declarations import ToolsetDeclaration
from agentgen.runtime.registry.client import CallRef, RegistryError, ResolvedToolset
from agentgen.runtime.runs.catalog import CatalogError, RegistryReadError
from examples.company.gen.registries import REGISTRIES, RegistrySettings
from tests.runtime.agents import (
    ScriptedPlanner,
    Sources,
    answer,
    calls,
    echo_handler,
    provider_toolset,
    records_definition,
)
from tests.runtime.fake_registry import FakeRegistry
from tests.runtime.test_saved_contracts import payments


def runtime_with(
    registry: Any, sources: Sources, *, timeout: float | None = None, planner: Any = None
) -> Runtime:
    rt = Runtime()
    if timeout is None:
        rt.register_registry("company", registry, registry)
    else:
        rt.register_registry("company", registry, registry, settings=_named("company", timeout))
    definition = records_definition(id="test.dyn", specs=(), deferred_tool_ids=())
    rt.register_agent(
        definition.with_registry_tools(sources),
        planner=planner or ScriptedPlanner([answer()]),
        executors={},
    )
    return rt


RECORDS = Sources(toolsets=[("company", "records", "", False)])
WHOLE = Sources(registries=[("company", False)])


async def read_error(registry: Any, sources: Sources = RECORDS, **kwargs: Any) -> str:
    rt = runtime_with(registry, sources, **kwargs)
    with pytest.raises(CatalogError) as info:
        # Bounded by the test as well: a hang here must fail, not freeze the suite.
        await asyncio.wait_for(rt.client("test.dyn").run("go"), 30)
    return str(info.value)


# --------------------------------------------------------------------------- malformed replies


class Replying(FakeRegistry):
    """A registry client whose resolve returns ``reply`` instead of a ResolvedToolset."""

    def __init__(self, reply: Any) -> None:
        super().__init__()
        self.reply = reply

    async def resolve_toolset(self, name: str) -> Any:
        return self.reply


def with_none_tool() -> ResolvedToolset:
    toolset = provider_toolset()
    toolset.tools.append(None)  # type: ignore[arg-type]
    return ResolvedToolset(toolset, "ab" * 32)


@pytest.mark.parametrize(
    ("reply", "fragment"),
    [
        (None, "NoneType"),
        ({"toolset": {"name": "records"}, "registration_token": "x"}, "dict"),
        (ResolvedToolset(None, "ab" * 32), "NoneType"),  # type: ignore[arg-type]
        (with_none_tool(), "tool 3 is None"),
        (ResolvedToolset(provider_toolset(), ""), "registration token"),
        (ResolvedToolset(provider_toolset(), None), "registration token"),  # type: ignore[arg-type]
    ],
    ids=["none", "dict", "no-toolset", "none-tool", "empty-token", "no-token"],
)
async def test_malformed_resolve_replies_are_typed_errors(reply: Any, fragment: str) -> None:
    message = await read_error(Replying(reply))
    assert message.startswith("resolve registry 'company' toolset 'records': "), message
    assert fragment in message


class Listing(FakeRegistry):
    def __init__(self, names: Any) -> None:
        super().__init__()
        self.names = names

    async def list_toolsets(self) -> Any:
        return self.names


@pytest.mark.parametrize("names", [None, "records", ["records", 5], {"records": 1}])
async def test_malformed_listings_are_typed_errors(names: Any) -> None:
    message = await read_error(Listing(names), WHOLE)
    assert message.startswith("list registry 'company': "), message
    assert "list of toolset names" in message


# --------------------------------------------------------------------------- timeouts


class Hanging(FakeRegistry):
    """Every request named in ``hang`` waits forever (until cancelled)."""

    def __init__(self, *hang: str) -> None:
        super().__init__()
        self.hang = set(hang)
        self.cancelled: list[str] = []

    async def _maybe_hang(self, what: str) -> None:
        if what in self.hang:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled.append(what)
                raise

    async def list_toolsets(self) -> list[str]:
        await self._maybe_hang("list")
        return await super().list_toolsets()

    async def resolve_toolset(self, name: str) -> ResolvedToolset:
        await self._maybe_hang("resolve")
        return await super().resolve_toolset(name)

    async def call_resolved_tool(self, **kwargs: Any) -> CallRef:
        await self._maybe_hang("call")
        return await super().call_resolved_tool(**kwargs)


@pytest.mark.parametrize(("hang", "sources"), [("resolve", RECORDS), ("list", WHOLE)])
async def test_the_design_timeout_bounds_registry_reads(hang: str, sources: Sources) -> None:
    registry = Hanging(hang)
    registry.publish(provider_toolset(), echo_handler)
    message = await read_error(registry, sources, timeout=0.05)
    assert "timed out after 0.05 s" in message and "Timeout" in message
    assert registry.cancelled == [hang]


async def test_registrations_without_settings_get_the_default_timeout() -> None:
    rt = Runtime()
    rt.register_registry("company", FakeRegistry(), FakeRegistry())
    assert rt.registry("company").timeout == limits.DEFAULT_REGISTRY_TIMEOUT
    rt.register_registry("other", FakeRegistry(), FakeRegistry(), settings=_named("other", 2.5))
    assert rt.registry("other").timeout == 2.5


def _named(name: str, timeout: float | None) -> RegistrySettings:
    return RegistrySettings(name, "https://registry.example", "v1", timeout=timeout)


def test_generated_settings_of_the_design_are_accepted() -> None:
    rt = Runtime()
    rt.register_registry("company", FakeRegistry(), FakeRegistry(), settings=REGISTRIES["company"])
    assert rt.registry("company").timeout == limits.DEFAULT_REGISTRY_TIMEOUT  # none declared


def test_settings_of_another_registry_are_refused() -> None:
    rt = Runtime()
    with pytest.raises(RegistrationError, match="settings of registry 'other'"):
        rt.register_registry("company", FakeRegistry(), FakeRegistry(), settings=_named("other", 1))


async def test_a_hanging_call_admission_is_a_registry_unavailable_tool_error() -> None:
    registry = Hanging("call")
    registry.publish(payments(), echo_handler)
    planner = ScriptedPlanner([calls(("payments.list", {"amount": 1})), answer()])
    sources = Sources(toolsets=[("company", "payments", "", False)])
    rt = runtime_with(registry, sources, timeout=0.05, planner=planner)
    outcome = await asyncio.wait_for(rt.client("test.dyn").run("go"), 30)
    error = json.loads(outcome.transcript[2].parts[0].content)["error"]  # type: ignore[union-attr]
    assert error["kind"] == "registry_unavailable"
    assert "timed out after 0.05 s" in error["message"]
    assert registry.cancelled == ["call"]


# --------------------------------------------------------------------------- failures


class Failing(FakeRegistry):
    def __init__(self, failure: BaseException, where: str) -> None:
        super().__init__()
        self.failure = failure
        self.where = where

    async def resolve_toolset(self, name: str) -> ResolvedToolset:
        if self.where == "resolve":
            raise self.failure
        return await super().resolve_toolset(name)

    async def call_resolved_tool(self, **kwargs: Any) -> CallRef:
        if self.where == "call":
            raise self.failure
        return await super().call_resolved_tool(**kwargs)


@pytest.mark.parametrize(
    ("failure", "shown"),
    [
        (TimeoutError(), "TimeoutError"),
        (ConnectionError(), "ConnectionError"),
        (ConnectionRefusedError(111, "Connection refused"), "Connection refused"),
    ],
)
async def test_read_errors_always_say_what_happened(failure: Exception, shown: str) -> None:
    registry = Failing(failure, "resolve")
    registry.publish(provider_toolset(), echo_handler)
    message = await read_error(registry)
    assert message.startswith("resolve registry 'company' toolset 'records': "), message
    assert shown in message
    assert not message.rstrip().endswith(":")


@pytest.mark.parametrize(
    "failure",
    [ConnectionError("refused"), ConnectionResetError(104, "reset"), OSError(113, "No route")],
)
async def test_an_unreachable_registry_is_registry_unavailable_not_internal_error(
    failure: Exception,
) -> None:
    registry = Failing(failure, "call")
    registry.publish(payments(), echo_handler)
    planner = ScriptedPlanner([calls(("payments.list", {"amount": 1})), answer()])
    sources = Sources(toolsets=[("company", "payments", "", False)])
    rt = runtime_with(registry, sources, planner=planner)
    outcome = await rt.client("test.dyn").run("go")
    error = json.loads(outcome.transcript[2].parts[0].content)["error"]  # type: ignore[union-attr]
    assert error["kind"] == "registry_unavailable", error
    assert type(failure).__name__ in error["message"]


# --------------------------------------------------------------------------- boundaries


@dataclass
class Mixed:
    """A registry where toolset ``pay`` publishes ``records.lookup`` next to ``records``."""

    registry: FakeRegistry

    @classmethod
    def build(cls) -> Mixed:
        registry = FakeRegistry()
        registry.publish(provider_toolset(), echo_handler)
        foreign = provider_toolset("pay")
        foreign.tools[0].name = "records.lookup"
        registry.publish(ToolsetDeclaration.model_validate(foreign.to_json()), echo_handler)
        return cls(registry)


async def test_a_toolset_publishing_another_toolsets_tool_is_blamed_by_name() -> None:
    message = await read_error(Mixed.build().registry, WHOLE)
    assert "toolset 'pay' publishes tool 'records.lookup'" in message
    assert "registry 'company' toolset 'pay'" in message


async def test_a_foreign_tool_is_refused_even_when_read_alone() -> None:
    message = await read_error(
        Mixed.build().registry, Sources(toolsets=[("company", "pay", "", False)])
    )
    assert "not a tool of toolset 'pay'" in message


async def caught(registry: Any, sources: Sources = RECORDS, **kwargs: Any) -> CatalogError:
    rt = runtime_with(registry, sources, **kwargs)
    with pytest.raises(CatalogError) as info:
        await asyncio.wait_for(rt.client("test.dyn").run("go"), 30)
    return info.value


@pytest.mark.parametrize(
    ("registry", "sources", "transient"),
    [
        (Failing(ConnectionRefusedError(111, "refused"), "resolve"), RECORDS, True),
        (Failing(TimeoutError(), "resolve"), RECORDS, True),
        (Failing(RegistryError("service_unavailable", "draining"), "resolve"), RECORDS, True),
        (Failing(RegistryError("validation_error", "bad name"), "resolve"), RECORDS, False),
        (Replying(with_none_tool()), RECORDS, False),
        (Replying(42), RECORDS, False),
    ],
)
async def test_read_errors_say_whether_the_registry_did_not_answer(
    registry: Any, sources: Sources, transient: bool
) -> None:
    """A durable engine retries a planning activity whose registry did not answer, and only
    that: a registry that answered wrongly fails the run at once."""
    registry.publish(provider_toolset(), echo_handler)
    error = await caught(registry, sources)
    assert isinstance(error, RegistryReadError)
    assert error.transient is transient


async def test_a_registry_read_that_timed_out_is_transient() -> None:
    registry = Hanging("list")
    registry.publish(provider_toolset(), echo_handler)
    error = await caught(registry, WHOLE, timeout=0.05)
    assert isinstance(error, RegistryReadError) and error.transient
