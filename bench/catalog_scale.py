"""Planning at catalog scale: one agent consuming a whole registry of 100 to 10,000 tools.

An in-memory registry (the tests' :class:`tests.runtime.fake_registry.FakeRegistry`, which
re-validates every declaration it hands out, as a client parsing a registry's answer would)
serves synthetic toolsets of about ten tools each; one agent consumes the whole registry with
deferred loading, and the real adapters (:class:`OpenAIResponsesModel`,
:class:`AnthropicMessagesModel`) talk to the official SDKs over an ``httpx2.MockTransport``.
For each size the script measures, beside the bound the issue compares it with:

- **cold build**: a planning activity's catalog (list, resolve, compile, advertise) with the
  compiled-contract cache empty, and the longest stall of the event loop meanwhile (a ticker
  task sleeping 1 ms records the largest gap between its wake-ups);
- **warm build**: the next activity, same registration tokens;
- **memory**: RSS, tracemalloc and GC-tracked objects a built catalog (and the cache) keep,
  measured in a fresh child process per size;
- **first request** per adapter: from ``complete()`` until the SDK hands the request to the
  transport (the adapter's own work, then the SDK's), beside the bound (OpenAI: the same
  request with a single deferred tool, since the body does not depend on the catalog;
  Anthropic: ``json.dumps`` of the body it sent);
- **search + call**: an OpenAI invocation whose model searches, then calls a hit (two rounds),
  and the execution of that call through the registry, beside building the search index over
  the deferred tools and answering one query.

Times are medians over ``--repeat`` runs. Run from the repository root after ``make test``:
``.venv/bin/python bench/catalog_scale.py [--sizes 100,1000,10000] [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gc
import hashlib
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the tests' in-memory registry and canned provider replies

import httpx2  # noqa: E402
from anthropic import AsyncAnthropic  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402
from vocabulary import DOMAINS, NOUNS, VERBS, description, properties  # noqa: E402  (bench/, the script's own folder)

from agentgen.runtime.adapters import AnthropicMessagesModel, OpenAIResponsesModel  # noqa: E402
from agentgen.runtime.adapters.names import provider_name  # noqa: E402
from agentgen.runtime.agents.definition import (  # noqa: E402
    AgentDefinition,
    RegistryCatalog,
    RunPolicy,
)
from agentgen.runtime.app import Runtime  # noqa: E402
from agentgen.runtime.contracts.declarations import ToolsetDeclaration  # noqa: E402
from agentgen.runtime.contracts.ids import humanize_title  # noqa: E402
from agentgen.runtime.contracts.wire import tool_schema_json  # noqa: E402
from agentgen.runtime.messages import Message  # noqa: E402
from agentgen.runtime.model_client import ModelClient, ModelRequest, ToolDefinition  # noqa: E402
from agentgen.runtime.registry.api import ResolveResponse  # noqa: E402
from agentgen.runtime.registry.client import ResolvedToolset, ToolCallMeta  # noqa: E402
from agentgen.runtime.runs import catalog as catalog_module  # noqa: E402
from agentgen.runtime.runs.accepted import AcceptedCall  # noqa: E402
from agentgen.runtime.runs.catalog import PlanningCatalog  # noqa: E402
from agentgen.runtime.runs.execution import ExecutionContext  # noqa: E402
from agentgen.runtime.runs.local import execute  # noqa: E402
from agentgen.runtime.runs.policy import merge  # noqa: E402
from agentgen.runtime.search.analysis import SEARCH_VERSION  # noqa: E402
from agentgen.runtime.search.document import (  # noqa: E402
    CLASSIC_VERSION,
    SearchDocument,
    search_document,
    search_text,
)
from agentgen.runtime.search.index import SearchEntry, SearchIndex  # noqa: E402
from tests.adapters.fakes import (  # noqa: E402
    claude_text,
    function_call,
    message,
    response,
    search_call,
    text,
)
from tests.runtime.fake_registry import FakeRegistry  # noqa: E402

try:  # answers kept as text (absent before: the client kept them parsed)
    from agentgen.runtime.registry.answers import kept_answer as _kept_answer
except ImportError:  # pragma: no cover - measuring the code before answers were kept as text
    _kept_answer = None  # type: ignore[assignment]

try:  # verdicts on schemas by their text (absent before issue 10's second CPU pass)
    from agentgen.runtime.contracts import schema_verdicts as _schema_verdicts
except ImportError:  # pragma: no cover - measuring the code before verdicts were kept
    _schema_verdicts = None  # type: ignore[assignment]

try:  # the compiled-contract cache (absent before issue 10: every build is then cold)
    from agentgen.runtime.contracts import cache as _contract_cache
except ImportError:  # pragma: no cover - measuring the code before the cache existed
    _contract_cache = None  # type: ignore[assignment]

#: Whether clients can report digests (not before issue 10: the script also measures that code).
_DIGESTS = "digest" in {f.name for f in dataclasses.fields(ResolvedToolset)}

SIZES = (100, 1000, 10_000)
#: The version of the search documents the synthetic tools publish: the generator's (current)
#: by default; ``--search-version 1`` publishes classic documents, as a registry serving
#: declarations from an older generator would, which the consumer then counts again.
DOCUMENT_VERSIONS = (SEARCH_VERSION, CLASSIC_VERSION)
_DOCUMENT_VERSION = [SEARCH_VERSION]
REGISTRY = "company"
AGENT_ID = "bench.agent"
#: Tools per toolset on average: 10,000 tools come in 1,008 toolsets, as in the issue.
TOOLS_PER_TOOLSET = 10_000 / 1008

_FIELDS: list[tuple[str, dict[str, Any]]] = [
    ("id", {"type": "string", "description": "Identifier of the {noun}."}),
    ("limit", {"type": "integer", "minimum": 1, "maximum": 100, "default": 20,
               "description": "Maximum number of results to return."}),
    ("since", {"type": "string", "format": "date-time",
               "description": "Only {noun}s changed after this instant."}),
    ("status", {"type": "string", "enum": ["open", "closed", "pending"],
                "description": "Status of the {noun}."}),
    ("query", {"type": "string", "description": "Free-text filter on the {noun}."}),
    ("owner", {"type": "string", "description": "Email address of the {noun} owner."}),
    ("tags", {"type": "array", "items": {"type": "string"}, "description": "Tags to match."}),
    ("include_archived", {"type": "boolean", "description": "Include archived {noun}s."}),
]  # fmt: skip


def _schema(title: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """A payload or result schema as pydantic writes them for generated declarations."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "properties": properties,
        "required": required,
        "title": title,
        "type": "object",
        "additionalProperties": False,
    }


def tool_declaration(rng: random.Random, toolset: str, verb: str, noun: str) -> dict[str, Any]:
    """One tool's wire declaration (about 2.4 KB of JSON; the issue's were about 1.8 KB)."""
    tool_id = f"{toolset}.{verb}_{noun}"
    title = humanize_title(f"{verb}_{noun}")
    text = description(verb, noun, toolset.rstrip("0123456789_"))
    fields = rng.sample(_FIELDS, rng.randint(1, 4))
    noun_title = noun.capitalize()
    payload = _schema(
        f"{verb.capitalize()}{noun_title}Args", properties(fields, noun), [fields[0][0]]
    )
    result = _schema(
        f"{noun_title}Page",
        {
            "items": {
                "type": "array",
                "items": {"type": "string"},
                "description": f"Identifiers of the {noun}s found.",
            },
            "next_cursor": {"type": "string", "description": "Cursor of the next page."},
        },
        ["items"],
    )
    if _DOCUMENT_VERSION[0] == SEARCH_VERSION:  # as generated providers publish them
        document = search_document(tool_id, title, text, payload)
    else:
        document = SearchDocument.from_text(search_text(tool_id, title, text))
    return tool_schema_json(
        tool_id=tool_id,
        title=title,
        description=text,
        tags=[toolset.rstrip("0123456789_"), verb],
        payload_schema=payload,
        payload_name=payload["title"],
        result_schema=result,
        result_name=result["title"],
        search=document,
    )


def toolsets(size: int, seed: int = 11) -> list[ToolsetDeclaration]:
    """``size`` tools in toolsets of about ten (``billing_3.get_invoice``, ...)."""
    rng = random.Random(seed)
    count = max(1, round(size / TOOLS_PER_TOOLSET))
    out = []
    for index in range(count):
        name = f"{DOMAINS[index % len(DOMAINS)]}_{index}"
        tools = size // count + (1 if index < size % count else 0)
        pairs = rng.sample([(v, n) for v in VERBS for n in NOUNS], tools)
        declarations = [tool_declaration(rng, name, verb, noun) for verb, noun in pairs]
        out.append(
            ToolsetDeclaration.model_validate(
                {"name": name, "version": "1.0.0", "tools": declarations}
            )
        )
    return out


async def _handler(tool: str, payload: Any, meta: ToolCallMeta) -> Any:
    return {"items": ["r1", f"found by {tool}"]}


@dataclass
class TimedRegistry:
    """The registry client the runtime sees: the fake registry, with its time accounted."""

    inner: FakeRegistry
    seconds: float = 0.0

    async def _timed(self, work: Awaitable[Any]) -> Any:
        start = time.perf_counter()
        try:
            return await work
        finally:
            self.seconds += time.perf_counter() - start

    async def list_toolsets(self) -> list[str]:
        names: list[str] = await self._timed(self.inner.list_toolsets())
        return names

    async def resolve_toolset(self, name: str) -> Any:
        return await self._timed(self.inner.resolve_toolset(name))

    async def call_resolved_tool(self, **kwargs: Any) -> Any:
        return await self.inner.call_resolved_tool(**kwargs)

    async def retry_tool(self, ref: Any, *, expected_registration_token: str) -> Any:
        return await self.inner.retry_tool(
            ref, expected_registration_token=expected_registration_token
        )

    async def await_result(self, ref: Any) -> Any:
        return await self.inner.await_result(ref)


@dataclass
class WireRegistry(TimedRegistry):
    """A client as one reading a registry over HTTP would be: it receives each admission's
    answer once (per registration token) as the registry service encodes it, and keeps it as
    :class:`~agentgen.runtime.registry.http_client.HttpRegistryClient` does (its token and
    toolset fields read, its tools left as text, the SHA-256 of the bytes as its digest),
    handing the kept answer out again while the token is unchanged."""

    #: Each toolset's resolve answer, encoded as the registry service encodes it.
    answers: dict[str, bytes] = field(default_factory=dict)
    kept: dict[tuple[str, str], ResolvedToolset] = field(default_factory=dict)

    async def resolve_toolset(self, name: str) -> Any:
        start = time.perf_counter()
        try:
            admission = self.inner.admissions[name]
            key = (name, admission.token)
            found = self.kept.get(key)
            if found is None:
                found = self.kept[key] = _keep(self.answers[name])
            return found
        finally:
            self.seconds += time.perf_counter() - start


def _answer(declaration: ToolsetDeclaration, token: str) -> bytes:
    """The registry service's resolve answer for an admission (see ``service._encode``)."""
    answer = ResolveResponse(toolset=declaration, registration_token=token)
    return answer.model_dump_json().encode()


def _keep(body: bytes) -> ResolvedToolset:
    """A resolve answer as the client keeps it."""
    if _kept_answer is not None:
        return _kept_answer(body)
    # Before answers were kept as text (the code issue 10 measured first): parsed whole.
    parsed = ResolveResponse.model_validate_json(body)
    digest = {"digest": hashlib.sha256(body).hexdigest()} if _DIGESTS else {}
    return ResolvedToolset(parsed.toolset, parsed.registration_token, **digest)


class WholeRegistry:
    """The agent's registry consumption: every toolset of the registry, deferred."""

    async def resolve(self, catalog: RegistryCatalog) -> None:
        await catalog.include_registry(REGISTRY, deferred=True)

    def allows(self, registry: str, toolset: str, version: str) -> bool:
        return registry == REGISTRY


@dataclass
class Setup:
    size: int
    runtime: Runtime
    registry: TimedRegistry
    declarations: list[ToolsetDeclaration]
    payload: list[bytes]


def setup(size: int, client: str = "wire") -> Setup:
    """The registry, the runtime and the agent; ``client`` is ``wire`` (a client that parses
    once per token and reports digests, see :class:`WireRegistry`) or ``fake`` (the tests'
    registry, which hands out a freshly validated copy on every read and no digest)."""
    declarations = toolsets(size)
    fake = FakeRegistry()
    for declaration in declarations:
        fake.publish(declaration, _handler)
    # The registry's own state lives in the registry's process in production, not in the
    # consumer's: keep the collector from walking it (it would dominate every full collection).
    gc.collect()
    gc.freeze()
    payload = [
        d.model_dump_json(by_alias=True, exclude_defaults=True).encode() for d in declarations
    ]
    registry: TimedRegistry
    if client == "wire":
        answers = {n: _answer(a.declaration, a.token) for n, a in fake.admissions.items()}
        registry = WireRegistry(fake, answers=answers)
    else:
        registry = TimedRegistry(fake)
    rt = Runtime()
    rt.register_registry(REGISTRY, registry, registry)
    rt.register_agent(
        AgentDefinition(
            id=AGENT_ID,
            description="Uses the whole company registry.",
            specs=(),
            registry_tools=WholeRegistry(),
        ),
        planner=_NoPlanner(),
        executors={},
    )
    return Setup(size, rt, registry, declarations, payload)


class _NoPlanner:
    async def plan_start(self, input: Any) -> Any:
        raise AssertionError("the benchmark drives activities itself")

    plan_resume = plan_start


async def build_activity(s: Setup) -> tuple[PlanningCatalog, Sequence[ToolDefinition]]:
    """What a planning activity does before its model call: read the registry into a catalog
    and list the definitions it advertises (as the run loop and ModelPlanner do)."""
    registration = s.runtime.agent(AGENT_ID)
    catalog = PlanningCatalog(s.runtime, registration, {}, merge(RunPolicy()).tools)
    tools = registration.definition.registry_tools
    assert tools is not None
    await tools.resolve(catalog)
    advertised = getattr(catalog, "advertised_tools", catalog.advertised_tool_definitions)()
    return catalog, advertised


def clear_cache(s: Setup | None = None) -> None:
    """Forget every compiled contract and schema verdict (and the answers a
    :class:`WireRegistry` kept), and the advertised definitions recent activities made from
    them: a cold build starts as in a fresh process, not beside the compiled tools of the
    builds before it."""
    if _contract_cache is not None:
        _contract_cache.default_cache().clear()
    if _schema_verdicts is not None:
        _schema_verdicts.default_verdicts().clear()
    advertised = getattr(catalog_module, "_ADVERTISED", None)
    if advertised is not None:
        advertised.entries.clear()
    if s is not None and isinstance(s.registry, WireRegistry):
        s.registry.kept.clear()


# ---------------------------------------------------------------------------- measuring


class GCPauses:
    """Seconds the garbage collector ran while active (any generation), via ``gc.callbacks``."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started = 0.0

    def _note(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started

    def __enter__(self) -> GCPauses:
        gc.callbacks.append(self._note)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._note)


async def _with_ticker(work: Callable[[], Awaitable[Any]]) -> tuple[Any, float, float]:
    """Run ``work`` while a ticker sleeps 1 ms at a time; return its result, its wall time and
    the longest the loop went without running the ticker, counted in this process's CPU time
    (wall-clock gaps also count time other processes of a busy machine took)."""
    stop = False
    longest = 0.0

    async def tick() -> None:
        nonlocal longest
        last = time.process_time()
        while not stop:
            await asyncio.sleep(0.001)
            now = time.process_time()
            longest = max(longest, now - last)
            last = now

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0)  # let it start
    start = time.perf_counter()
    result = await work()
    elapsed = time.perf_counter() - start
    stop = True
    await ticker
    return result, elapsed, longest


def median(values: list[float]) -> float:
    return statistics.median(values)


@dataclass
class Row:
    step: str
    size: int
    value: float
    unit: str
    bound: float | None
    bound_label: str
    target: str = ""

    def ratio(self) -> str:
        if not self.bound:
            return ""
        return f"{self.value / self.bound:.2f}×"


def fmt(value: float, unit: str) -> str:
    if unit == "ms":
        return f"{value * 1000:,.1f} ms" if value < 10 else f"{value * 1000:,.0f} ms"
    if unit == "MiB":
        return f"{value / 2**20:,.1f} MiB"
    if unit == "objects":
        return f"{value:,.0f}"
    return f"{value:,.2f} {unit}"


def parse_payload(s: Setup) -> float:
    """The bound of a catalog build: parsing the registry's whole answer into declarations."""
    start = time.perf_counter()
    for body in s.payload:
        ToolsetDeclaration.model_validate_json(body)
    return time.perf_counter() - start


async def measure_builds(s: Setup, repeat: int) -> dict[str, float]:
    """Cold (nothing compiled or parsed yet) and warm (same tokens) activity builds."""
    samples: dict[str, list[float]] = {}

    def note(key: str, value: float) -> None:
        samples.setdefault(key, []).append(value)

    for _ in range(repeat):
        clear_cache(s)
        gc.collect()
        s.registry.seconds = 0.0
        cpu = time.process_time()
        with GCPauses() as pauses:
            _, elapsed, stall = await _with_ticker(lambda: build_activity(s))
        note("cold_cpu", time.process_time() - cpu)
        note("cold", elapsed)
        note("cold_stall", stall)
        note("cold_gc", pauses.seconds)
        gc.collect()
        s.registry.seconds = 0.0
        with GCPauses() as pauses:
            _, elapsed, stall = await _with_ticker(lambda: build_activity(s))
        note("warm", elapsed)
        note("warm_stall", stall)
        note("warm_gc", pauses.seconds)
        note("warm_registry", s.registry.seconds)
        # The same cold build with the collector paused: the catalog's own cost and slices,
        # without the full collections that walk the client's parsed answers.
        clear_cache(s)
        gc.collect()
        cpu = time.process_time()
        gc.disable()
        try:
            _, elapsed, stall = await _with_ticker(lambda: build_activity(s))
        finally:
            gc.enable()
        note("paused_cpu", time.process_time() - cpu)
        note("paused", elapsed)
        note("paused_stall", stall)
    for _ in range(max(3, repeat)):
        note("parse", parse_payload(s))
    return {key: median(values) for key, values in samples.items()}


# ------------------------------------------------------------------ adapters on a mock wire


@dataclass
class Wire:
    """A mock transport that notes when each request arrives and answers from a script."""

    replies: list[dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]] = field(
        default_factory=list
    )
    arrivals: list[float] = field(default_factory=list)
    handed: list[float] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        self.arrivals.append(time.perf_counter())
        self.bodies.append(request.content)
        reply = self.replies.pop(0)
        if callable(reply):
            reply = reply(json.loads(request.content))
        return httpx2.Response(200, json=reply)

    def http_client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self.handler))


def openai_model(wire: Wire) -> OpenAIResponsesModel:
    client = AsyncOpenAI(
        api_key="sk-test",
        base_url="http://stub.local/v1",
        http_client=wire.http_client(),
        max_retries=0,
    )
    return OpenAIResponsesModel(client)


def anthropic_model(wire: Wire) -> AnthropicMessagesModel:
    client = AsyncAnthropic(
        api_key="sk-ant-test",
        base_url="http://stub.local",
        http_client=wire.http_client(),
        max_retries=0,
    )
    return AnthropicMessagesModel(client)


def _request(tools: Sequence[ToolDefinition]) -> ModelRequest:
    return ModelRequest(
        model="bench-model",
        messages=(Message.user("Which invoices are still open for ada@example.com?"),),
        tools=tools,
        max_tokens=1024,
    )


def _note_sdk_calls(model: Any, wire: Wire) -> None:
    """Note when the adapter hands its body to the SDK (the end of the adapter's own work)."""
    client = model._client
    resources = (
        [client.responses]
        if isinstance(client, AsyncOpenAI)
        else [
            client.messages,
            client.beta.messages,
        ]
    )
    for endpoint in resources:
        create = endpoint.create

        async def noted(*args: Any, _create: Any = create, **kwargs: Any) -> Any:
            wire.handed.append(time.perf_counter())
            return await _create(*args, **kwargs)

        endpoint.create = noted


async def first_request(
    build: Callable[[Wire], ModelClient], reply: dict[str, Any], tools: Sequence[ToolDefinition]
) -> tuple[float, float, bytes]:
    """Seconds from ``complete()`` to the adapter handing the body to the SDK and to the
    request reaching the transport, and the body."""
    wire = Wire([reply])
    model = build(wire)
    _note_sdk_calls(model, wire)
    request = _request(tools)
    gc.collect()
    with GCPauses() as pauses:
        start = time.perf_counter()
        await model.complete(request)
    _LAST_GC[0] = pauses.seconds
    return wire.handed[0] - start, wire.arrivals[0] - start, wire.bodies[0]


#: Garbage collection during the last :func:`first_request` (seconds).
_LAST_GC = [0.0]


async def measure_first_requests(
    tools: Sequence[ToolDefinition], repeat: int
) -> dict[str, float | int]:
    openai_reply = response(text("ok"))
    anthropic_reply = message(claude_text("ok"))
    one = [tools[0]]
    # Warm the SDKs (lazy imports, first-use caches) before timing anything.
    await first_request(openai_model, openai_reply, one)
    await first_request(anthropic_model, anthropic_reply, one)
    times: dict[str, list[float]] = {}
    sizes: dict[str, int] = {}

    def note(key: str, value: float) -> None:
        times.setdefault(key, []).append(value)

    for _ in range(repeat):
        adapter, total, body = await first_request(openai_model, openai_reply, tools)
        note("openai_adapter", adapter)
        note("openai", total)
        sizes["openai_bytes"] = len(body)
        adapter, total, _ = await first_request(openai_model, openai_reply, one)
        note("openai_one_adapter", adapter)
        note("openai_one", total)
        adapter, total, body = await first_request(anthropic_model, anthropic_reply, tools)
        note("anthropic_gc", _LAST_GC[0])
        note("anthropic_adapter", adapter)
        note("anthropic", total)
        sizes["anthropic_bytes"] = len(body)
        sent = json.loads(body)
        start = time.perf_counter()
        json.dumps(sent)
        note("anthropic_dumps", time.perf_counter() - start)
    return {**{key: median(values) for key, values in times.items()}, **sizes}


async def search_and_call(
    s: Setup, catalog: PlanningCatalog, tools: Sequence[ToolDefinition]
) -> float:
    """One OpenAI invocation (search, then a call to a hit) and the execution of that call."""
    target = next(tool for tool in tools if tool.deferred)
    name = provider_name(target.id)
    schema = json.loads(target.parameters_json)
    required = schema["required"]
    arguments = json.dumps({key: _example(schema["properties"][key]) for key in required})
    wire = Wire(
        [
            response(search_call("s1", target.title + " " + target.id.split(".")[0])),
            response(function_call("c1", name, arguments, name)),
        ]
    )
    model = openai_model(wire)
    registration = s.runtime.agent(AGENT_ID)
    context = ExecutionContext(s.runtime, registration, _run_context())
    start = time.perf_counter()
    answer = await model.complete(_request(tools))
    call = answer.message.tool_calls()[0]
    accepted = catalog.accept(call)
    assert isinstance(accepted, AcceptedCall), accepted
    result = await execute(context, accepted)
    elapsed = time.perf_counter() - start
    assert not result.is_error, result.content
    return elapsed


def _example(schema: dict[str, Any]) -> Any:
    """A valid value for one of the synthetic payload properties."""
    examples = {"string": "x", "integer": 1, "boolean": True, "array": []}
    if "enum" in schema:
        return schema["enum"][0]
    if schema.get("format") == "date-time":
        return "2026-01-01T00:00:00Z"
    return examples[schema["type"]]


def _run_context() -> Any:
    from agentgen.runtime.agents.planning import RunContext

    return RunContext(run_id="bench-run", agent_id=AGENT_ID, labels={})


def index_and_query(tools: Sequence[ToolDefinition]) -> float:
    """The bound of a search round: an index over the deferred tools and one query."""
    target = next(tool for tool in tools if tool.deferred)
    start = time.perf_counter()
    index = SearchIndex(
        [
            SearchEntry(tool.id, tool.search, aliases=(provider_name(tool.id),))
            for tool in tools
            if tool.deferred
        ]
    )
    index.search(target.title + " " + target.id.split(".")[0])
    return time.perf_counter() - start


async def measure_search(s: Setup, repeat: int) -> dict[str, float]:
    catalog, tools = await build_activity(s)
    cycles = [await search_and_call(s, catalog, tools) for _ in range(repeat)]
    bounds = [index_and_query(tools) for _ in range(repeat)]
    return {"cycle": median(cycles), "index": median(bounds)}


# ---------------------------------------------------------------------------- memory


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def _memory_child(size: int) -> dict[str, float]:
    # The tests' registry, whose answers are garbage once read: what stays is the catalog's
    # (and the contract cache's), not a client's cache of parsed answers.
    s = setup(size, "fake")
    small = setup(10, "fake")
    await build_activity(small)  # imports and first-use caches, outside the measurement
    clear_cache(s)
    gc.collect()
    objects_before = len(gc.get_objects())
    rss_before = _rss()
    catalog, tools = await build_activity(s)
    gc.collect()
    rss_after = _rss()
    objects_after = len(gc.get_objects())
    del catalog, tools
    clear_cache(s)
    gc.collect()
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    kept = await build_activity(s)
    gc.collect()
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del kept
    return {
        "rss": rss_after - rss_before,
        "traced": current - before,
        "peak": peak - before,
        "objects": objects_after - objects_before,
        "payload": sum(len(body) for body in s.payload),
        "maxrss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def measure_memory(size: int) -> dict[str, float]:
    """In a fresh process, so that memory freed by earlier sizes does not hide growth."""
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--memory-child",
            str(size),
            "--search-version",
            str(_DOCUMENT_VERSION[0]),
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


# ---------------------------------------------------------------------------- report


def iter_rows(
    size: int,
    builds: dict[str, float],
    memory: dict[str, float],
    first: dict[str, float | int],
    search: dict[str, float],
) -> Iterator[Row]:
    yield Row("cold build (parse + compile)", size, builds["cold"], "ms", builds["parse"],
              "parse payload", "≤ 2 s")  # fmt: skip
    yield Row("  CPU time", size, builds["cold_cpu"], "ms", None, "")
    yield Row("  garbage collection", size, builds["cold_gc"], "ms", None, "")
    yield Row("longest loop stall, cold build", size, builds["cold_stall"], "ms", 0.050,
              "50 ms", "≤ 50 ms")  # fmt: skip
    yield Row("cold build, collector paused", size, builds["paused"], "ms", builds["parse"],
              "parse payload")  # fmt: skip
    yield Row("  CPU time", size, builds["paused_cpu"], "ms", None, "")
    yield Row("  longest loop stall", size, builds["paused_stall"], "ms", 0.050, "50 ms")
    yield Row("warm build (same tokens)", size, builds["warm"], "ms", builds["parse"],
              "parse payload", "≤ 50 ms")  # fmt: skip
    yield Row("  garbage collection", size, builds["warm_gc"], "ms", None, "")
    yield Row("longest loop stall, warm build", size, builds["warm_stall"], "ms", 0.050, "50 ms")
    yield Row("cold build, client without digest", size, builds["plain_cold"], "ms",
              builds["parse"], "parse payload")  # fmt: skip
    yield Row("warm build, client without digest", size, builds["plain_warm"], "ms",
              builds["parse"], "parse payload")  # fmt: skip
    yield Row("  of which the client's own reads", size, builds["plain_registry"], "ms", None, "")
    yield Row("catalog memory (RSS)", size, memory["rss"], "MiB", memory["payload"],
              "payload bytes", "≤ 30 MiB")  # fmt: skip
    yield Row("catalog memory (tracemalloc)", size, memory["traced"], "MiB", memory["payload"],
              "payload bytes")  # fmt: skip
    yield Row("GC-tracked objects kept", size, memory["objects"], "objects", None, "")
    yield Row("OpenAI first request: adapter", size, float(first["openai_adapter"]), "ms",
              float(first["openai_one_adapter"]), "same, 1 tool", "≤ 2 ms")  # fmt: skip
    yield Row("OpenAI first request: adapter + SDK", size, float(first["openai"]), "ms",
              float(first["openai_one"]), "same, 1 tool")  # fmt: skip
    yield Row("Anthropic first request: adapter", size, float(first["anthropic_adapter"]), "ms",
              float(first["anthropic_dumps"]), "json.dumps(body)")  # fmt: skip
    yield Row("Anthropic first request: adapter + SDK", size, float(first["anthropic"]), "ms",
              float(first["anthropic_dumps"]), "json.dumps(body)", "≤ 2×")  # fmt: skip
    yield Row("  garbage collection", size, float(first["anthropic_gc"]), "ms", None, "")
    yield Row("search + call (2 rounds)", size, search["cycle"], "ms", search["index"],
              "index + query")  # fmt: skip


async def measure(size: int, repeat: int) -> list[Row]:
    plain = setup(size, "fake")
    builds_plain = await measure_builds(plain, repeat)
    del plain
    s = setup(size)
    builds = await measure_builds(s, repeat)
    builds["plain_cold"] = builds_plain["cold"]
    builds["plain_warm"] = builds_plain["warm"]
    builds["plain_registry"] = builds_plain["warm_registry"]
    _, tools = await build_activity(s)
    first = await measure_first_requests(tools, repeat)
    search = await measure_search(s, repeat)
    memory = measure_memory(size)
    print(
        f"# {size} tools in {len(s.declarations)} toolsets; payload "
        f"{memory['payload'] / 2**20:.1f} MiB; OpenAI body {first['openai_bytes']:,} B, "
        f"Anthropic body {first['anthropic_bytes'] / 2**20:.1f} MiB",
        file=sys.stderr,
    )
    return list(iter_rows(size, builds, memory, first, search))


def table(rows: list[Row]) -> str:
    lines = [
        "| step, per planning activity | tools | measured | bound | measured / bound | target |",
        "|---|---:|---:|---|---:|---|",
    ]
    for row in rows:
        bound = f"{row.bound_label}: {fmt(row.bound, row.unit)}" if row.bound else ""
        if row.bound and row.unit == "MiB":
            bound = f"{row.bound_label}: {fmt(row.bound, 'MiB')}"
        lines.append(
            f"| {row.step} | {row.size:,} | {fmt(row.value, row.unit)} | {bound} | "
            f"{row.ratio()} | {row.target} |"
        )
    return "\n".join(lines)


async def profile(size: int, sort: str, limit: int) -> None:
    """cProfile of two planning activities (cold, then warm), both first requests and a
    search + call cycle, printed as the ``limit`` most expensive functions."""
    import cProfile
    import pstats

    s = setup(size)
    clear_cache(s)
    profiler = cProfile.Profile()
    profiler.enable()
    await build_activity(s)
    catalog, tools = await build_activity(s)
    await first_request(openai_model, response(text("ok")), tools)
    await first_request(anthropic_model, message(claude_text("ok")), tools)
    await search_and_call(s, catalog, tools)
    profiler.disable()
    stats = pstats.Stats(profiler, stream=sys.stdout)
    stats.strip_dirs().sort_stats(sort).print_stats(limit)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", type=int, metavar="SIZE", help="cProfile one size instead")
    parser.add_argument("--sort", default="tottime", help="pstats order for --profile")
    parser.add_argument(
        "--search-version",
        type=int,
        choices=DOCUMENT_VERSIONS,
        default=SEARCH_VERSION,
        help="version of the search documents the synthetic tools publish (default: the "
        f"generator's, {SEARCH_VERSION}; {CLASSIC_VERSION}: an older generator's, recounted "
        "by the consumer)",
    )
    parser.add_argument("--memory-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    _DOCUMENT_VERSION[0] = args.search_version
    if args.profile:
        asyncio.run(profile(args.profile, args.sort, 30))
        return
    if args.memory_child:
        print(json.dumps(asyncio.run(_memory_child(args.memory_child))))
        return
    rows: list[Row] = []
    for size in (int(s) for s in args.sizes.split(",")):
        rows += asyncio.run(measure(size, args.repeat))
    print(table(rows))


if __name__ == "__main__":
    main()
