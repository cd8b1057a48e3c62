"""agentgen.runtime.testing: scripted and function models, recorded provider exchanges."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from agentgen.runtime import (
    Message,
    ModelError,
    ModelPlanner,
    ModelRequest,
    RunPolicy,
    Runtime,
    ToolContext,
)
from agentgen.runtime.testing import (
    METADATA_KEY,
    Answer,
    Call,
    FunctionModel,
    RecordedProvider,
    Recording,
    RecordingError,
    ScriptedModel,
    ScriptError,
    Search,
    Turn,
)
from examples.records.gen.assistant.agents import assistant, clerk
from examples.records.gen.assistant.toolsets.records import types

ROOT = Path(__file__).resolve().parents[2]


class Records:
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def lookup(self, args: types.LookupArgs, context: ToolContext) -> types.Record:
        self.calls.append(f"lookup {args.id}")
        return types.Record(id=args.id, title="Tokyo", body="Sunny")

    async def search(self, args: types.SearchArgs, context: ToolContext) -> types.SearchResult:
        self.calls.append(f"search {args.query}")
        return types.SearchResult(ids=["r1"])

    async def analyze(self, args: types.AnalyzeArgs, context: ToolContext) -> types.Analysis:
        self.calls.append(f"analyze {','.join(args.ids)}")
        return types.Analysis(summary="sunny")


def wire(model: Any, agent: Any = assistant) -> tuple[Runtime, Records]:
    rt = Runtime()
    rt.register_model("m", model)
    executor = Records()
    config = getattr(agent, f"{agent.__name__.rsplit('.', 1)[1].capitalize()}AgentConfig")
    register = getattr(agent, f"register_{agent.__name__.rsplit('.', 1)[1]}_agent")
    register(rt, config(planner=ModelPlanner("m"), records_executor=executor))
    return rt, executor


# --------------------------------------------------------------------------- ScriptedModel


async def test_a_script_searches_calls_and_answers() -> None:
    model = ScriptedModel(
        [
            Search("search records"),
            Call("records.search", {"query": "weather"}),
            [Call("records.lookup", {"id": "r1"}), Call("records.analyze", '{"ids": ["r1"]}')],
            Turn(text="Sunny in Tokyo."),
        ]
    )
    rt, executor = wire(model)
    outcome = await assistant.new_client(rt).run("Weather records?")
    assert outcome.final_text == "Sunny in Tokyo."
    assert executor.calls == ["search weather", "lookup r1", "analyze r1"]
    assert model.finished
    assert model.searches == [("search records", ["records.search", "records.analyze"])]
    assert [t.deferred for t in model.requests[0].tools] == [False, True, True]
    records = outcome.transcript[1].metadata[METADATA_KEY]
    assert records == [{"query": "search records", "loaded": ["records.search", "records.analyze"]}]


async def test_a_deferred_tool_cannot_be_called_before_a_search_finds_it() -> None:
    model = ScriptedModel([Call("records.analyze", {"ids": []}), "never"])
    rt, executor = wire(model)
    with pytest.raises(ScriptError) as raised:
        await assistant.new_client(rt).run("Analyze.")
    assert str(raised.value) == (
        "ScriptedModel: turn 1 calls 'records.analyze', which the model cannot see: it is "
        "deferred and no search loaded it in this conversation (the model's searches: none); "
        "add a Search(...) that finds it before the call"
    )
    assert executor.calls == []


async def test_a_search_of_another_conversation_loads_nothing_in_this_one() -> None:
    """A provider finds a deferred tool for the conversation whose search found it: a new
    conversation (or one compacted past the search) must search again. The test models kept
    what any earlier request loaded, so such a test passed where a provider refuses the call."""
    model = ScriptedModel(
        [
            Search("analyze"),
            Call("records.analyze", {"ids": ["a"]}),
            "first",
            Call("records.analyze", {"ids": ["b"]}),
            "never",
        ]
    )
    rt, executor = wire(model)
    client = assistant.new_client(rt)
    first = await client.run("Analyze a.")
    assert first.final_text == "first" and executor.calls == ["analyze a"]
    with pytest.raises(ScriptError, match="no search loaded it in this conversation"):
        await client.run("Analyze b.")
    # Continuing the first conversation, the tool its search found is still loaded.
    model = ScriptedModel([Call("records.analyze", {"ids": ["c"]}, call_id="c3"), "again"])
    rt, executor = wire(model)
    outcome = await assistant.new_client(rt).run([*first.transcript, Message.user("And c.")])
    assert outcome.final_text == "again" and executor.calls == ["analyze c"]


@pytest.mark.parametrize(
    "step", [Call("records.lookup", {"id": "r2"}, call_id="c2"), Turn("x", searches=["search"])]
)
async def test_a_request_with_tool_choice_none_gets_no_call_nor_search(step: Any) -> None:
    """A final-answer-only request asks with tool choice 'none', which a provider answers with
    text only: the test models called and searched anyway (the run then failed blaming the
    planner, or a search the provider never runs was recorded and the test passed)."""
    model = ScriptedModel([Call("records.lookup", {"id": "r1"}, call_id="c1"), step])
    rt, executor = wire(model, clerk)
    with pytest.raises(ScriptError, match="turn 2 .*tool choice is 'none'"):
        await clerk.new_client(rt).run("Look up r1.", policy=RunPolicy(max_tool_calls=1))
    assert executor.calls == ["lookup r1"]
    assert model.searches == []


async def test_a_tool_the_request_does_not_offer_cannot_be_called() -> None:
    model = ScriptedModel([Call("records.delete", {})])
    rt, _ = wire(model, clerk)
    with pytest.raises(ScriptError, match="calls 'records.delete', which this request does not"):
        await clerk.new_client(rt).run("Delete.")


async def test_a_mistyped_tool_in_a_script_is_named_with_the_tool_it_resembles() -> None:
    # It asked only whether the tool was hidden by a run policy or not used by the agent.
    model = ScriptedModel([Call("records.lookpu", {"id": "r1"})])
    rt, _ = wire(model, clerk)
    with pytest.raises(ScriptError, match="did you mean 'records.lookup'"):
        await clerk.new_client(rt).run("Look up r1.")


async def test_running_out_of_script_is_a_clear_failure() -> None:
    model = ScriptedModel([Call("records.lookup", {"id": "r1"})])
    rt, _ = wire(model, clerk)
    with pytest.raises(ScriptError, match="request 2 arrived after the script ran out"):
        await clerk.new_client(rt).run("Look up r1.")
    assert not ScriptedModel([Answer("x")]).finished


@pytest.mark.parametrize(
    ("make", "message"),
    [
        # A str is a sequence: each letter was a search, a step or a call.
        (lambda: Turn(searches="analyze"), r"searches=\['analyze'\] for one search"),
        (lambda: ScriptedModel("done"), r"ScriptedModel\(\['done'\]\) for a script of one step"),
        (lambda: Turn(calls=Call("records.lookup")), r"write calls=\[Call\(\.\.\.\)\]"),
        (lambda: ScriptedModel(["ok", None]), r"step 1 of the script is None, not a Turn"),
        (lambda: ScriptedModel([[]]), "step 0 of the script is an empty list of calls"),
        (lambda: Search("analyze", limit=0), r"limit=0\): the limit is how many tools"),
        (lambda: Call("records.lookup", {"id": object()}), "'records.lookup'.* are not JSON"),
        (lambda: FunctionModel(["done"]), r"takes a function of the request, got \['done'\]"),
    ],
)
def test_a_script_of_the_wrong_types_is_refused_when_written(make: Any, message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        make()


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (None, "the reply to request 1 is None, not a Turn"),
        (
            Search("analyze"),
            r"the reply to request 1 is a Search\(\.\.\.\) alone: a search runs before a turn",
        ),
    ],
)
async def test_a_function_reply_of_the_wrong_type_names_the_request(
    reply: Any, message: str
) -> None:
    rt, _ = wire(FunctionModel(lambda request: reply), clerk)
    with pytest.raises(TypeError, match=rf"FunctionModel: {message}"):
        await clerk.new_client(rt).run("hi")


# --------------------------------------------------------------------------- FunctionModel


async def test_a_function_model_sees_each_request_and_answers_it() -> None:
    seen: list[list[str]] = []

    async def respond(request: ModelRequest) -> Turn | str:
        seen.append([t.id for t in request.tools if t.deferred])
        if len(seen) == 1:
            return Turn(searches=["analyze"], calls=[Call("records.analyze", {"ids": ["a"]})])
        return f"{len(request.messages)} messages"

    model = FunctionModel(respond)
    rt, executor = wire(model)
    outcome = await assistant.new_client(rt).run("Analyze a.")
    assert outcome.final_text == "3 messages"
    assert executor.calls == ["analyze a"]
    assert seen[0] == ["records.search", "records.analyze"]
    assert model.loaded == {"records.analyze"}


async def test_a_plain_function_works_too() -> None:
    model = FunctionModel(lambda request: Answer(request.messages[-1].text.upper()))
    rt, _ = wire(model, clerk)
    assert (await clerk.new_client(rt).run("hi")).final_text == "HI"


# --------------------------------------------------------------------------- recordings


def openai_text(text: str, response_id: str = "resp_1") -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "response",
        "created_at": 1767225600,
        "status": "completed",
        "model": "gpt-5.4",
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        "usage": {
            "input_tokens": 10,
            "output_tokens": 3,
            "total_tokens": 13,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


CLAUDE_TEXT = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-opus-4-7",
    "content": [{"type": "text", "text": "Records are sunny."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 12, "output_tokens": 4},
}


async def test_inline_replies_play_through_the_real_openai_adapter() -> None:
    replay = Recording.of("openai", openai_text("Hello.")).player()
    rt, _ = wire(replay.model(), clerk)
    outcome = await clerk.new_client(rt).run("hi")
    assert outcome.final_text == "Hello."
    assert replay.finished
    assert replay.requests[0]["tools"] == ["records_lookup", "records_search", "records_analyze"]


async def test_the_sdk_client_of_a_player_takes_input_as_a_bare_string() -> None:
    # The Responses API's shortest form: the player read the string as items and failed with
    # AttributeError: 'str' object has no attribute 'get'.
    replay = Recording.of("openai", openai_text("Hello.")).player()
    response = await replay.client().responses.create(model="gpt-5.4", input="What's up?")
    assert response.output_text == "Hello."
    assert replay.requests[0]["input"] == ["user: What's up?"]
    replay.assert_finished()


async def test_a_request_the_player_cannot_read_is_refused_as_a_problem() -> None:
    # A GET has no JSON body: summarising it raised inside the transport, the SDK failed the
    # call with a bare JSONDecodeError, and `problems` stayed empty.
    import openai

    replay = Recording.of("openai", openai_text("Hello.")).player()
    with pytest.raises(openai.BadRequestError, match="request 1 \\(GET /v1/models\\) is not a"):
        await replay.client().models.list()
    assert replay.problems == [
        "request 1 (GET /v1/models) is not a request this openai recording can answer: "
        "JSONDecodeError: Expecting value: line 1 column 1 (char 0)"
    ]
    with pytest.raises(RecordingError, match="GET /v1/models"):
        replay.assert_finished()


@pytest.mark.parametrize("provider", ["anthropic", "anthropic-bedrock"])
async def test_anthropic_replies_direct_and_on_bedrock(provider: Any) -> None:
    replay = Recording.of(provider, CLAUDE_TEXT).player()
    rt, _ = wire(replay.model(), clerk)
    outcome = await clerk.new_client(rt).run("hi")
    assert outcome.final_text == "Records are sunny."
    replay.assert_finished()
    expected = "/v1/messages" if provider == "anthropic" else "/model/m/invoke"
    assert replay.requests[0]["path"] == expected


async def test_a_reply_not_in_the_wire_shape_is_refused_with_the_sdk_types() -> None:
    broken = openai_text("Hello.")
    del broken["id"]
    replay = Recording.of("openai", broken).player()
    rt, _ = wire(replay.model(), clerk)
    with pytest.raises(ModelError):
        await clerk.new_client(rt).run("hi")
    (problem,) = replay.problems
    assert problem.startswith(
        "reply 1 is not a valid Responses API reply: the recording holds a reply the openai SDK "
        'cannot read, and no provider was asked; correct that exchange\'s "response" to the '
        "API's wire shape, or record the exchange again. 1 validation error for Response"
    )
    assert "id\n  Field required" in problem
    with pytest.raises(RecordingError, match="reply 1 is not a valid Responses API reply"):
        replay.assert_finished()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_recorded_reply_the_sdk_cannot_read_blames_the_recording_not_the_provider(
    tmp_path: Path, provider: Any
) -> None:
    # The player's HTTP 400 reached the run as "the provider refused this request: fix what
    # it names", though no provider was asked and the recording file was at fault.
    broken = dict(openai_text("Hello.") if provider == "openai" else CLAUDE_TEXT)
    del broken["id"]
    path = tmp_path / f"{provider}.json"
    path.write_text(json.dumps({"provider": provider, "exchanges": [{"response": broken}]}))
    replay = Recording.load(path).player()
    rt, _ = wire(replay.model(), clerk)
    with pytest.raises(ModelError) as raised:
        await clerk.new_client(rt).run("hi")
    message = str(raised.value)
    sdk = "Responses API reply" if provider == "openai" else "Messages API reply"
    assert message.startswith(
        f"the {provider} recording cannot answer this request: reply 1 in {path} (exchange 1) "
        f"is not a valid {sdk}: the recording holds a reply the {provider} SDK cannot read, "
        "and no provider was asked; correct that exchange's \"response\" to the API's wire "
        "shape, or record the exchange again."
    )
    assert "the provider refused this request" not in message
    assert raised.value.transient is False
    assert replay.served == 0


async def test_a_request_that_differs_from_the_recording_is_answered_400() -> None:
    recording = Recording.load(ROOT / "examples/quickstart/recordings/openai.json", "openai")
    replay = RecordedProvider(recording)
    rt, _ = wire(replay.model(), clerk)
    with pytest.raises(ModelError):
        await clerk.new_client(rt).run("hi")
    assert replay.served == 0
    assert replay.problems[0].startswith("request 1 does not match the recording in ")
    assert '"calendar_list_events",' in replay.problems[0].split("the recording answers:")[1]


@pytest.mark.parametrize("through", ["model", "client"])
async def test_a_request_that_does_not_match_names_the_file_what_differs_and_what_to_do(
    through: str,
) -> None:
    """The SDK reads the player's 400 as the provider refusing the request ("fix what it
    names"), and two whole summaries side by side hid the one field that changed: the message
    names the recording file, each difference, that no provider was asked, and the remedy."""
    from agentgen.runtime.adapters import OpenAIResponsesModel

    path = ROOT / "examples/quickstart/recordings/openai.json"
    replay = Recording.load(path, "openai").player()
    model = replay.model() if through == "model" else OpenAIResponsesModel(replay.client())
    rt, _ = wire(model, clerk)
    with pytest.raises(ModelError) as raised:
        await clerk.new_client(rt).run("hi")
    message = str(raised.value)
    assert (
        f"request 1 does not match the recording in {path} (exchange 1): "
        'model: the run sent "m", the recording has "gpt-5.4"; '
        'tools item 1: the run sent "records_lookup", the recording has "calendar_list_events" '
        "(the run sent 3 items, the recording has 2); "
        'input item 1: the run sent "user: hi", the recording has '
        '"user: What\'s the weather in Tokyo today?". '
        "No provider was asked: the recording answered, and it cannot answer this; if the "
        "run's requests changed on purpose, record the exchange again (or correct its "
        '"request"); otherwise the run changed by mistake.'
    ) in message
    assert message.count(str(path)) == 1
    # Through client(), the adapter's own words: before, "the provider refused this request".
    assert "the provider refused this request" not in message
    if through == "model":
        assert message.startswith("the openai recording cannot answer this request: request 1")
    else:
        assert message.endswith(
            "; answered by agentgen's recording player, not by a provider: fix what it names"
        )


async def test_a_request_past_the_recording_names_the_file_and_what_to_do() -> None:
    path = ROOT / "examples/quickstart/recordings/openai.json"
    recording = Recording.load(path, "openai")
    cut = Recording(recording.provider, (), recording.model, recording.prompt, path)
    replay = cut.player()
    rt, _ = wire(replay.model(), clerk)
    with pytest.raises(ModelError) as raised:
        await clerk.new_client(rt).run("hi")
    assert (
        f"request 1 was not recorded: the recording in {path} holds 0 exchange(s), and the run "
        "asked for another model reply. No provider was asked: the recording answered, and it "
        "cannot answer this; if the run now makes more model calls on purpose, record the "
        "conversation again; otherwise find why it did not end. The request:\n"
    ) in str(raised.value)


async def test_unused_and_missing_exchanges_are_reported() -> None:
    replay = Recording.of("openai", openai_text("a"), openai_text("b")).player()
    rt, _ = wire(replay.model(), clerk)
    await clerk.new_client(rt).run("hi")
    with pytest.raises(RecordingError, match="the run ended after 1 of the 2 recorded exchanges"):
        replay.assert_finished()
    again = Recording.of("openai").player()
    rt, _ = wire(again.model(), clerk)
    with pytest.raises(ModelError):
        await clerk.new_client(rt).run("hi")
    assert again.problems[0].startswith("request 1 was not recorded: the recording holds 0")


def test_recording_files_are_checked_on_load(tmp_path: Path) -> None:
    path = ROOT / "examples/quickstart/recordings/anthropic.json"
    with pytest.raises(RecordingError, match="is a recording of anthropic, not of openai"):
        Recording.load(path, "openai")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"provider": "gemini", "exchanges": []}))
    with pytest.raises(RecordingError, match="unknown provider 'gemini'"):
        Recording.load(bad)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], r"expected a recording, .* as a JSON object, found a JSON list"),
        ({"provider": "openai"}, 'a recording needs "exchanges"'),
        ({"provider": "openai", "exchanges": {}}, '"exchanges" is a JSON list of'),
        ({"provider": "openai", "exchanges": [{}]}, 'exchange 1 has no "response"'),
        # Loaded, then the run that played it failed with a bare ValueError from dict().
        (
            {"provider": "openai", "exchanges": [{"response": {}}, {"response": "hi"}]},
            'exchange 2: "response": expected the provider\'s reply as a JSON object, found a '
            "JSON string",
        ),
        (
            {"provider": "openai", "exchanges": [{"response": {}, "request": ["x"]}]},
            'exchange 1: "request": expected the summary of the request',
        ),
        ({"provider": "openai", "model": 5, "exchanges": []}, '"model" is text, not a JSON number'),
    ],
)
def test_a_recording_file_of_the_wrong_shape_names_the_file_and_the_exchange(
    tmp_path: Path, data: Any, message: str
) -> None:
    path = tmp_path / "recording.json"
    path.write_text(json.dumps(data))
    with pytest.raises(RecordingError, match=f"^{re.escape(str(path))}: .*{message}"):
        Recording.load(path)


def test_a_reply_given_in_code_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(RecordingError, match="Recording.of: reply 2: .* found a JSON string"):
        Recording.of("openai", openai_text("hi"), "hi")  # type: ignore[arg-type]


def test_no_sdk_private_attribute_is_used() -> None:
    quickstart = ROOT / "examples/quickstart/tool_search.py"
    for path in [*(ROOT / "runtime/testing").glob("*.py"), quickstart]:
        assert "_strict_response_validation" not in path.read_text(), path


def test_the_in_process_registry_loads_only_when_used() -> None:
    import subprocess
    import sys

    probe = (
        "import sys, agentgen.runtime.testing as t\n"
        "assert 'fastapi' not in sys.modules and 'uvicorn' not in sys.modules\n"
        "from agentgen.runtime.registry.local import LocalRegistry\n"
        "assert t.LocalRegistry is LocalRegistry\n"
    )
    subprocess.run([sys.executable, "-c", probe], check=True)


async def test_the_in_process_registry_serves_a_generated_toolset() -> None:
    import asyncio

    from agentgen.runtime.registry.http_client import HttpRegistryClient
    from agentgen.runtime.registry.provider import ServeOptions, serve_toolset
    from agentgen.runtime.testing import LocalRegistry
    from examples.quickstart.gen.quickstart.toolsets.weather import (
        declarations,
        executor,
        specs,
        types,
    )

    class Weather:
        async def forecast(self, args: types.ForecastArgs, context: object) -> types.Forecast:
            return types.Forecast(
                city=args.city, conditions="sunny", temperature_c=21, wind="calm", summary="ok"
            )

    with LocalRegistry() as registry:
        client = HttpRegistryClient(registry.url)
        stop = asyncio.Event()
        registered: asyncio.Queue[str] = asyncio.Queue()
        options = ServeOptions(provider_id="weather-1", handle_signals=False)
        task = asyncio.create_task(
            serve_toolset(
                client,
                declarations.toolset(),
                executor.bind(Weather()),  # type: ignore[arg-type]
                revision="r1",
                specs=specs.SPECS,
                options=options,
                stop=stop,
                on_registered=registered.put_nowait,
            )
        )
        token = await asyncio.wait_for(registered.get(), 10)
        resolved = await client.resolve_toolset(specs.TOOLSET)
        assert resolved.registration_token == token
        assert [tool.name for tool in resolved.toolset.tools] == [specs.FORECAST]
        stop.set()
        await asyncio.wait_for(task, 15)
        await client.aclose()


def test_a_local_registry_that_cannot_start_says_why(tmp_path: Path) -> None:
    from agentgen.runtime.testing import LocalRegistry

    junk = tmp_path / "registry.db"
    junk.write_bytes(b"not a database, " * 64)
    # uvicorn logged the store's error and exited 3: the RuntimeError said "did not start: 3".
    with pytest.raises(RuntimeError, match=r"did not start: StoreError: .*registry\.db"):
        LocalRegistry(f"sqlite:{junk}", start_timeout=20)


def test_record_telemetry_without_the_sdk_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # agentgen needs the OpenTelemetry API only: without the SDK the recorder raised a bare
    # "No module named 'opentelemetry.sdk'" that did not say what to install.
    from agentgen.runtime.testing import record_telemetry

    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.metrics", None)
    with pytest.raises(ModuleNotFoundError) as missing:
        record_telemetry.__wrapped__()  # past the cache: another test may have installed it
    assert "pip install 'agentgen[otel]'" in str(missing.value)
    assert missing.value.name == "opentelemetry.sdk.metrics"


def test_a_local_registry_refuses_a_store_of_the_wrong_type_when_made() -> None:
    from agentgen.runtime.testing import LocalRegistry

    # It started a server whose start failed on "'int' object has no attribute 'open'".
    with pytest.raises(TypeError, match=r"must be a Store \(an object with open, close") as info:
        LocalRegistry(5)  # type: ignore[arg-type]
    assert "('memory', 'sqlite:PATH' or 'redis://HOST:PORT/DB'); got int 5" in str(info.value)


def test_a_misspelt_agentgen_metric_is_refused_with_the_close_names() -> None:
    from agentgen.runtime.testing import record_telemetry

    recorder = record_telemetry()
    # It read as a metric with no points: a before/after comparison passed measuring nothing.
    with pytest.raises(ValueError, match=r"no metric 'agentgen.tool.call'; did you mean") as info:
        recorder.metric("agentgen.tool.call")
    assert "'agentgen.tool.calls'" in str(info.value)
    assert isinstance(recorder.metric("agentgen.tool.calls"), list)


def test_an_applications_own_metric_is_read_with_its_scope() -> None:
    from opentelemetry import metrics

    from agentgen.runtime.testing import record_telemetry

    recorder = record_telemetry()
    counter = metrics.get_meter("shop").create_counter("shop.orders")
    before = sum(p.value for p in recorder.metric("shop.orders", scope="shop"))
    counter.add(2, {"kind": "test"})
    after = sum(p.value for p in recorder.metric("shop.orders", scope="shop"))
    assert after - before == 2
    with pytest.raises(ValueError, match="agentgen records no metric 'shop.orders'"):
        recorder.metric("shop.orders")


def test_every_metric_agentgen_records_is_in_the_names_list() -> None:
    from agentgen.runtime.telemetry import names

    source = (ROOT / "runtime" / "telemetry" / "instruments.py").read_text(encoding="utf-8")
    created = re.findall(r"METER\.create_\w+\(\s*names\.(\w+)", source)
    assert len(created) == len(names.METRICS)
    assert sorted(getattr(names, n) for n in created) == sorted(names.METRICS)


async def test_a_copy_of_a_recorded_providers_model_runs_like_it() -> None:
    # The wrapper that words the player's failures forwarded every attribute it lacks to its
    # adapter, its own "_adapter" included: a copy (made without __init__) looked that up
    # forever, and copy.copy or pickle raised RecursionError.
    import copy

    replay = Recording.of("openai", openai_text("Hello.")).player()
    model = copy.copy(replay.model())
    rt, _ = wire(model, clerk)
    answer = await clerk.new_client(rt).run("hi")
    assert answer.final_text == "Hello."
    replay.assert_finished()
