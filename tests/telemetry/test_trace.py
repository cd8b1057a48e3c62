"""The run trace for people (``agentgen.runtime.trace``) and ``agentgen trace``, on stored
transcripts: the quickstart's runs through the real OpenAI and Anthropic adapters (their native
search records), and a scripted run (the test models' records)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentgen.codegen.cli import main
from agentgen.runtime import (
    Message,
    ModelPlanner,
    Runtime,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    ToolResultPart,
)
from agentgen.runtime.adapters import OPENAI_METADATA_KEY
from agentgen.runtime.model_client import USAGE_METADATA_KEY
from agentgen.runtime.search.document import search_document
from agentgen.runtime.testing import Call, ScriptedModel, Search
from agentgen.runtime.trace import TraceError, events, loaded_tools, print_trace, render
from agentgen.runtime.transcript import dumps, loads
from examples.records.gen.assistant.agents import assistant
from tests.e2e.test_records_e2e import Records
from tests.telemetry.runs import quickstart

RESULT = (
    'weather.forecast → {"city":"Tokyo","conditions":"sunny","temperature_c":24,'
    '"wind":"light breeze","summary":"Tokyo: sunny, 24°C, light breeze"}'
)
ANSWER = "It's sunny in Tokyo today: 24°C with a light breeze."

OPENAI = [
    "user     What's the weather in Tokyo today?",
    'search   "weather forecast"',
    "loaded   weather.forecast",
    'call     weather.forecast {"city":"Tokyo"}',
    f"result   {RESULT}",
    f"answer   {ANSWER}",
    "usage    1,298 input + 57 output tokens, the sum of 2 model responses (737 + 40, 561 + 17)",
]
ANTHROPIC = [
    "user     What's the weather in Tokyo today?",
    "model    I'll look for a weather tool.",
    'search   "weather|forecast" (tool_search_tool_regex)',
    "loaded   weather.forecast",
    'call     weather.forecast {"city": "Tokyo"}',
    f"result   {RESULT}",
    f"answer   {ANSWER}",
    "usage    3,067 input + 137 output tokens, the sum of 2 model responses "
    "(1,412 + 118, 1,655 + 19)",
]


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The quickstart's transcripts on both providers, stored as an application would."""
    import asyncio

    folder = tmp_path_factory.mktemp("transcripts")
    paths = {}
    for provider in ("openai", "anthropic"):
        outcome = asyncio.run(quickstart(provider))  # type: ignore[arg-type]
        path = folder / f"{provider}.json"
        path.write_text(dumps(outcome.transcript), encoding="utf-8")
        paths[provider] = path
    return paths


@pytest.mark.parametrize(("provider", "expected"), [("openai", OPENAI), ("anthropic", ANTHROPIC)])
def test_a_stored_transcript_renders_search_load_call_result_answer_usage(
    stored: dict[str, Path], provider: str, expected: list[str]
) -> None:
    messages = loads(stored[provider].read_text(encoding="utf-8"))
    assert render(messages).plain.splitlines() == expected
    assert loaded_tools(messages) == {"weather.forecast"}


def test_the_catalog_shows_after_the_question_when_the_tools_are_given(
    stored: dict[str, Path],
) -> None:
    tools = [
        ToolDefinition(
            tool_id, tool_id, "", "{}", search_document(tool_id, tool_id, "", {}), deferred
        )
        for tool_id, deferred in (("calendar.list_events", False), ("weather.forecast", True))
    ]
    lines = render(loads(stored["openai"].read_text()), tools=tools).plain.splitlines()
    assert lines[:4] == [
        "user     What's the weather in Tokyo today?",
        "tools    immediate: calendar.list_events",
        "         deferred (1): weather.forecast",
        'search   "weather forecast"',
    ]


async def test_a_scripted_runs_outcome_renders_its_searches_and_parallel_calls() -> None:
    model = ScriptedModel(
        [
            Search("search records"),
            [Call("records.search", {"query": "weather"}), Call("records.lookup", {"id": "r1"})],
            "Found them.",
        ]
    )
    rt = Runtime()
    rt.register_model("scripted", model)
    assistant.register_assistant_agent(
        rt,
        assistant.AssistantAgentConfig(
            planner=ModelPlanner("scripted"), records_executor=Records()
        ),
    )
    outcome = await assistant.new_client(rt).run("Weather?")
    lines = render(outcome).plain.splitlines()
    assert lines == [
        "user     Weather?",
        'search   "search records"',
        "loaded   records.search, records.analyze",
        'call     records.search {"query": "weather"}',
        'call     records.lookup {"id": "r1"}',
        'result   records.search → {"ids":["r1","r2"]}',
        'result   records.lookup → {"id":"r1","title":"Tokyo","body":"Sunny"}',
        "answer   Found them.",
        "usage    20 input + 10 output tokens, the sum of 2 model responses (10 + 5, 10 + 5)",
    ]
    kinds = [e.kind for e in events(outcome)]
    assert kinds == [
        "user",
        "search",
        "loaded",
        "call",
        "call",
        "result",
        "result",
        "answer",
        "usage",
    ]
    out = io.StringIO()
    print_trace(outcome, file=out)
    assert out.getvalue().splitlines() == lines  # no escape codes in a file


def test_an_error_result_and_text_beside_calls_are_marked() -> None:
    messages = [
        Message.user("go"),
        Message("assistant", (TextPart("Let me check."), ToolCallPart("c1", "a.b", "{}"))),
        Message.from_json(
            {
                "role": "tool",
                "parts": [
                    {
                        "kind": "tool_result",
                        "call_id": "c1",
                        "tool_id": "a.b",
                        "content": '{"denied": "no"}',
                        "is_error": True,
                    }
                ],
            }
        ),
        Message("assistant", (TextPart("Denied."),)),
    ]
    assert render(messages).plain.splitlines() == [
        "user     go",
        "model    Let me check.",
        "call     a.b {}",
        'result   a.b → {"denied": "no"} (error)',
        "answer   Denied.",
    ]
    styled = render(messages)
    error_line = [span for span in styled.spans if span.style == "red"]
    assert error_line, "an error result is styled"


def test_escape_sequences_from_models_and_tools_reach_the_terminal_as_text() -> None:
    # A trace shows what a model and a tool wrote; a terminal obeys escape sequences, so an
    # ESC from either could erase or forge the lines a person reviews. They print as escapes.
    erase = "\x1b[1A\x1b[2K"
    messages = [
        Message.user("go\u202e"),
        Message("assistant", (TextPart("ok" + erase), ToolCallPart("c1", "a.b", "{}"))),
        Message(
            "tool",
            (
                ToolResultPart(
                    "c1", "a.b", '"done\r\tcall     a.b {}\u0007\x1b]52;c;cHduZWQ=\u0007"'
                ),
            ),
        ),
        Message("assistant", (TextPart("Done."),)),
    ]
    assert render(messages).plain.splitlines() == [
        "user     go\\u202e",
        "model    ok\\x1b[1A\\x1b[2K",
        "call     a.b {}",
        'result   a.b → "done\tcall     a.b {}\\x1b]52;c;cHduZWQ="',  # BEL and CR: stripped
        "answer   Done.",
    ]
    out = io.StringIO()
    print_trace(messages, file=out, color=True)
    printed = out.getvalue()
    # Only the renderer's own styling reaches the terminal: no cursor moves, no OSC sequence.
    assert "\x1b[1A" not in printed and "\x1b]" not in printed and "\x07" not in printed
    unstyled = io.StringIO()
    print_trace(messages, file=unstyled, color=False)
    assert unstyled.getvalue().splitlines()[1] == "model    ok\\x1b[1A\\x1b[2K"


def test_records_changed_after_storing_are_named_not_guessed(stored: dict[str, Path]) -> None:
    data = json.loads(stored["openai"].read_text())
    records = data[1]["metadata"][OPENAI_METADATA_KEY]["records"]
    records[0]["at"] = 99
    with pytest.raises(TraceError, match=r"message 1 \(assistant\).*anchored at 99"):
        events(loads(json.dumps(data)))


def test_agentgen_trace_prints_a_stored_transcript(stored: dict[str, Path]) -> None:
    runner = CliRunner()
    for provider, expected in (("openai", OPENAI), ("anthropic", ANTHROPIC)):
        result = runner.invoke(main, ["trace", str(stored[provider])])
        assert result.exit_code == 0, result.output
        assert result.output.splitlines() == expected
    colored = runner.invoke(main, ["trace", "--color", str(stored["openai"])])
    assert "\x1b[" in colored.output
    piped = runner.invoke(main, ["trace", "-"], input=stored["anthropic"].read_text())
    assert piped.output.splitlines() == ANTHROPIC


def test_agentgen_trace_names_a_file_that_is_not_a_transcript(
    tmp_path: Path, stored: dict[str, Path]
) -> None:
    runner = CliRunner()
    bad = tmp_path / "notes.json"
    bad.write_text('{"role": "user"}')
    result = runner.invoke(main, ["trace", str(bad)])
    assert result.exit_code == 2
    assert f"{bad}: not a stored transcript (a stored transcript is a JSON list" in result.output
    data = json.loads(stored["openai"].read_text())
    data[1]["metadata"][OPENAI_METADATA_KEY]["records"] = "gone"
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(data))
    result = runner.invoke(main, ["trace", str(broken)])
    assert result.exit_code == 2
    assert f"{broken}: message 1 (assistant) metadata 'openai.tool_search'" in result.output


def test_agentgen_trace_refuses_bad_part_kinds_and_usage_counts_without_a_traceback() -> None:
    # An object kind was "a bug in agentgen" (exit 3, TypeError); -5 and true tokens were
    # printed as "-5 input + 1 output tokens".
    runner = CliRunner()
    odd_kind = [{"role": "user", "parts": [{"kind": {"a": 1}, "text": "hi"}], "metadata": {}}]
    result = runner.invoke(main, ["trace", "--no-color", "-"], input=json.dumps(odd_kind))
    assert result.exit_code == 2
    assert (
        "<stdin>: not a stored transcript (message 0: unknown message part kind {'a': 1} "
        "(one of text, tool_call, tool_result))"
    ) in result.output
    assert "bug in agentgen" not in result.output
    usage = {"model": "m", "input_tokens": -5, "output_tokens": True}
    negative = [
        {
            "role": "assistant",
            "parts": [{"kind": "text", "text": "hi"}],
            "metadata": {USAGE_METADATA_KEY: usage},
        }
    ]
    result = runner.invoke(main, ["trace", "--no-color", "-"], input=json.dumps(negative))
    assert result.exit_code == 2
    assert f"message 0 (assistant): {USAGE_METADATA_KEY!r} is malformed" in result.output
    assert "-5 input" not in result.output


def test_agentgen_trace_names_a_file_it_cannot_read_without_a_traceback(tmp_path: Path) -> None:
    # Both were "bug in agentgen" (exit 3) with a traceback.
    runner = CliRunner()
    latin = tmp_path / "latin.json"
    latin.write_bytes(b"\xff\xfe[]")
    result = runner.invoke(main, ["trace", str(latin)])
    assert result.exit_code == 2
    assert f"{latin}: not UTF-8 text (byte 0: invalid start byte)" in result.output
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    result = runner.invoke(main, ["trace", str(deep)])
    assert result.exit_code == 2
    assert (
        f"{deep}: not a stored transcript (nested deeper than 128 levels, the limit for a "
        "stored transcript; what dumps writes"
    ) in " ".join(result.output.split())


def test_agentgen_trace_reads_a_transcript_saved_with_a_byte_order_mark(
    tmp_path: Path, stored: dict[str, Path]
) -> None:
    """Editors and Windows tools (PowerShell's ``Out-File``, Notepad) write UTF-8 with a BOM."""
    marked = tmp_path / "marked.json"
    marked.write_bytes(b"\xef\xbb\xbf" + stored["openai"].read_bytes())
    runner = CliRunner()
    result = runner.invoke(main, ["trace", str(marked)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == OPENAI
    piped = runner.invoke(main, ["trace", "-"], input=marked.read_bytes())
    assert piped.exit_code == 0, piped.output
    assert piped.output.splitlines() == OPENAI


def test_agentgen_trace_names_the_record_at_fault_without_a_traceback(
    tmp_path: Path, stored: dict[str, Path]
) -> None:
    runner = CliRunner()
    data = json.loads(stored["openai"].read_text())
    cases = {
        "number.json": (
            json.dumps([*data[:2], 5]),
            "message 2: a message must be a JSON object, not int",
        ),
        "torn.json": (
            json.dumps([*data[:2], {"role": "tool", "parts": [{"kind": "tool_result"}]}]),
            "message 2: tool_result part has missing ['call_id', 'content', 'tool_id']",
        ),
        "empty.json": (" \n", "is empty; write a stored transcript with"),
    }
    for name, (text, expected) in cases.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        result = runner.invoke(main, ["trace", str(path)])
        assert result.exit_code == 2, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert f"error: {path}: " in result.output
        assert expected in result.output


def test_a_long_runs_usage_line_lists_the_first_responses_and_counts_the_rest() -> None:
    messages = [Message.user("go")]
    for turn in range(25):
        reply = Message("assistant", (TextPart(f"turn {turn}"),))
        usage = {"model": "m", "input_tokens": 1000 + turn, "output_tokens": 2}
        messages.append(reply.with_metadata(USAGE_METADATA_KEY, usage))
    (summary,) = [e for e in events(messages) if e.kind == "usage"]
    assert len(summary.usage) == 25
    assert summary.text == (
        "25,300 input + 50 output tokens, the sum of 25 model responses (1,000 + 2, 1,001 + 2, "
        "1,002 + 2, 1,003 + 2, 1,004 + 2, 1,005 + 2, 1,006 + 2, 1,007 + 2, 1,008 + 2, "
        "1,009 + 2, and 15 more)"
    )


def test_rendering_without_rich_says_what_to_install() -> None:
    code = (
        "import sys; sys.modules['rich'] = None; sys.modules['rich.text'] = None\n"
        "from agentgen.runtime import Message\n"
        "from agentgen.runtime.trace import render, events\n"
        "assert [e.kind for e in events([Message.user('hi')])] == ['user']\n"
        "try:\n    render([Message.user('hi')])\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'agentgen[trace]'" in done.stdout


def test_importing_and_running_loads_neither_rich_nor_the_opentelemetry_sdk() -> None:
    code = (
        "import asyncio, sys\n"
        "from agentgen.runtime import Runtime, ModelPlanner\n"
        "from agentgen.runtime.testing import ScriptedModel, Search, Call\n"
        "from examples.records.gen.assistant.agents import assistant\n"
        "from tests.e2e.test_records_e2e import Records\n"
        "rt = Runtime()\n"
        "rt.register_model('m', ScriptedModel([Search('search'), Call('records.search', "
        "{'query': 'q'}), 'done']))\n"
        "assistant.register_assistant_agent(rt, assistant.AssistantAgentConfig("
        "planner=ModelPlanner('m'), records_executor=Records()))\n"
        "outcome = asyncio.run(assistant.new_client(rt).run('q'))\n"
        "assert outcome.final_text == 'done'\n"
        "print(sorted(m for m in sys.modules if m.startswith(('rich', 'opentelemetry.sdk'))))\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    )
    assert done.stdout.strip() == "[]"


def test_unstyled_output_is_what_rich_prints_control_codes_stripped(
    stored: dict[str, Path],
) -> None:
    # Without styling the trace is written directly (rich took ~4 s of CPU on a 16 MB
    # transcript to print it unchanged): the bytes must be the ones rich prints.
    from rich.console import Console

    noisy = Message("assistant", (TextPart("ring\a back\b\r\nline\x0b two\x0c\tend é"),))
    for messages in (
        [*loads(stored["openai"].read_text()), noisy],
        [*loads(stored["anthropic"].read_text())],
    ):
        reference = io.StringIO()
        console = Console(file=reference, soft_wrap=True, highlight=False, color_system=None)
        console.print(render(messages), end="")
        for color in (False, None):  # --no-color, and a file that is not a terminal
            written = io.StringIO()
            print_trace(messages, file=written, color=color)
            assert written.getvalue() == reference.getvalue()
    shown = io.StringIO()
    print_trace([noisy, Message("assistant", (TextPart("a\rb"),))], file=shown, color=False)
    assert shown.getvalue() == ("answer   ring back\n         line two       end é\nanswer   ab\n")


@pytest.mark.parametrize(
    ("source", "message"),
    [
        # A str is a sequence: each character was read as a message ('str' object has no
        # attribute 'tool_calls').
        ('[{"role": "user"}]', "not a stored transcript's JSON text: pass .*loads"),
        ([{"role": "user", "parts": []}], "message 0 is a dict, not a Message: .*loads"),
        (None, r"a run's outcome \(RunOutcome\) or its transcript, not a NoneType"),
    ],
)
def test_a_trace_of_something_else_than_messages_says_what_to_pass(
    source: object, message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        events(source)  # type: ignore[arg-type]


def test_a_trace_written_to_a_cp1252_file_escapes_what_it_cannot_encode() -> None:
    # A Windows application redirecting its output (python app.py > run.log): the trace's own
    # arrow raised a bare UnicodeEncodeError at the first result.
    raw = io.BytesIO()
    log = io.TextIOWrapper(raw, encoding="cp1252")
    messages = [
        Message("user", (TextPart("Météo ?"),)),
        Message("assistant", (ToolCallPart("c1", "records.lookup", "{}"),)),
        Message("tool", (ToolResultPart("c1", "records.lookup", '"ok"'),)),
        # A line with a tab is laid out by rich (its tab stops), then written the same way.
        Message("assistant", (TextPart("a\tb →"),)),
    ]
    print_trace(messages, file=log)
    assert raw.getvalue().decode("cp1252").splitlines() == [
        "user     Météo ?",
        "call     records.lookup {}",
        'result   records.lookup \\u2192 "ok"',
        "answer   a      b \\u2192",
    ]
