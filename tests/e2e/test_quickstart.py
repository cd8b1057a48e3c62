"""The quickstart (``python -m examples.quickstart.tool_search``) end to end, offline.

The real adapters and SDK clients run against the recorded replies; these tests check what a
newcomer sees -- search, the loaded forecast tool, the call, the fixed Tokyo result, the final
answer and the token usage -- and that nothing reaches the network: sockets are patched to
fail, so a request that escaped the in-process transport would break the run.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest

from examples.quickstart import tool_search

ROOT = Path(__file__).resolve().parents[2]
CREDENTIALS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_PROFILE",
)


class NetworkUsed(OSError):
    """An OSError, as a refused connection would be, so the HTTP stack reports it normally."""


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every attempt to resolve or connect raises (and is listed); no credentials are set."""
    attempts: list[str] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        attempts.append(repr(args))
        raise NetworkUsed(f"the quickstart tried to use the network: {args!r}")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    for name in CREDENTIALS:
        monkeypatch.delenv(name, raising=False)
    return attempts


def trace(output: str) -> list[tuple[str, str]]:
    """The trace's steps as (label, text); continuation lines join the step above. The header
    (up to the first blank line) is skipped."""
    steps: list[tuple[str, str]] = []
    lines = output.splitlines()
    for line in lines[lines.index("") + 1 if "" in lines else 0 :]:
        label, text = line[:8].strip(), line[9:]
        if label and line[8:9] == " ":
            steps.append((label, text))
        elif not label and line.startswith(" " * 9) and steps:
            steps[-1] = (steps[-1][0], f"{steps[-1][1]}\n{text}")
    return steps


def recorded_usage(provider: str) -> tuple[int, int]:
    data = json.loads((tool_search.RECORDINGS / f"{provider}.json").read_text())
    replies = [exchange["response"]["usage"] for exchange in data["exchanges"]]
    return sum(u["input_tokens"] for u in replies), sum(u["output_tokens"] for u in replies)


def assert_story(output: str, provider: str, query: str) -> None:
    steps = trace(output)
    labels = [label for label, _ in steps]
    assert labels == [
        "user",
        "tools",
        *(["model"] if provider == "anthropic" else []),
        "search",
        "loaded",
        "call",
        "result",
        "answer",
        "usage",
        "note",
    ], output
    text = dict(steps)
    assert text["user"] == tool_search.PROMPT
    assert text["tools"].startswith("immediate: calendar.list_events\ndeferred (4): ")
    assert "weather.forecast" in text["tools"].splitlines()[1]
    assert text["search"] == query
    assert text["loaded"] == "weather.forecast"
    tool, arguments = text["call"].split(" ", 1)
    assert (tool, json.loads(arguments)) == ("weather.forecast", {"city": "Tokyo"})
    result_tool, result = text["result"].split(" → ")
    assert result_tool == "weather.forecast"
    assert json.loads(result) == tool_search.TOKYO.model_dump()
    assert json.loads(result)["summary"] == "Tokyo: sunny, 24°C, light breeze"
    assert text["answer"] == "It's sunny in Tokyo today: 24°C with a light breeze."
    tokens_in, tokens_out = recorded_usage(provider)
    assert text["usage"].startswith(f"{tokens_in:,} input + {tokens_out:,} output tokens, ")
    assert "bench/first_request.py" in text["note"]


@pytest.mark.parametrize(
    ("provider", "query"),
    [
        ("openai", '"weather forecast"'),
        ("anthropic", '"weather|forecast" (tool_search_tool_regex)'),
    ],
)
def test_offline_run_traces_search_load_call_result_answer_and_usage(
    provider: str, query: str, no_network: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    status = tool_search.main(["--provider", provider])
    output, errors = capsys.readouterr()
    assert (status, errors) == (0, "")
    assert_story(output, provider, query)
    assert "offline, no credentials: replaying " in output
    assert f"recordings/{provider}.json)" in output
    assert no_network == []


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_run_quickstart_executes_the_forecast_once_for_tokyo(
    provider: tool_search.Provider, no_network: list[str]
) -> None:
    recorded = tool_search.player(tool_search.load_recording(provider))
    out = io.StringIO()
    result = await tool_search.run_quickstart(
        recorded.model(),
        provider=provider,
        model=recorded.recording.model,
        out=out,
    )
    assert result.cities == ("Tokyo",)
    assert result.answer == "It's sunny in Tokyo today: 24°C with a light breeze."
    assert (result.usage.input_tokens, result.usage.output_tokens) == recorded_usage(provider)
    assert result.responses == 2
    assert recorded.served == len(recorded.recording.exchanges)
    assert recorded.problems == []


def test_openai_withholds_the_forecast_until_searched() -> None:
    # The recording pins what the adapter sends; this is the part the quickstart demonstrates.
    data = json.loads((tool_search.RECORDINGS / "openai.json").read_text())
    first, second, third = (exchange["request"] for exchange in data["exchanges"])
    assert first["tools"] == ["calendar_list_events", "tool_search"]
    assert "weather_forecast" not in json.dumps(first)
    assert second["input"][-1] == "tool_search_output call_search_01: loaded weather_forecast"
    assert "in namespace weather_forecast" in third["input"][-2]
    assert "Tokyo: sunny, 24°C, light breeze" in third["input"][-1]
    kinds = [item["type"] for e in data["exchanges"] for item in e["response"]["output"]]
    assert kinds == ["tool_search_call", "function_call", "message"]


def test_anthropic_recording_is_hosted_search_then_tool_use() -> None:
    data = json.loads((tool_search.RECORDINGS / "anthropic.json").read_text())
    first = data["exchanges"][0]
    assert "weather_forecast (defer_loading)" in first["request"]["tools"]
    assert first["request"]["tools"][-1].startswith("tool_search_tool_regex ")
    kinds = [block["type"] for block in first["response"]["content"]]
    assert kinds == ["text", "server_tool_use", "tool_search_tool_result", "tool_use"]


def test_python_dash_m_runs_offline_in_a_fresh_process() -> None:
    env = {k: v for k, v in os.environ.items() if k not in CREDENTIALS}
    env["PYTHONIOENCODING"] = "utf-8"
    done = subprocess.run(
        [sys.executable, "-m", "examples.quickstart.tool_search"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert_story(done.stdout, "openai", '"weather forecast"')


@pytest.mark.parametrize(
    ("argv", "variable"),
    [
        (["--model", "gpt-5.4"], "OPENAI_API_KEY"),
        (["--provider", "anthropic", "--model", "claude-opus-4-7"], "ANTHROPIC_API_KEY"),
        (["--provider", "anthropic", "--bedrock", "--model", "some.claude"], "AWS_REGION"),
        (["--bedrock", "--model", "openai.gpt-oss-120b-1:0"], "AWS_REGION"),
    ],
)
def test_a_missing_variable_is_one_line_naming_it_and_exit_2(
    argv: list[str],
    variable: str,
    no_network: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = tool_search.main(argv)
    output, errors = capsys.readouterr()
    assert status == 2
    assert output == ""
    assert errors.count("\n") == 1
    assert errors.startswith(f"error: {variable} is not set: ")
    assert "Traceback" not in errors
    assert no_network == []


def test_a_real_call_that_cannot_connect_fails_in_one_line(
    no_network: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # With a key, --model really goes to the network: the patched sockets refuse it, which
    # also shows that the guard used by the offline tests is effective.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://quickstart-test.invalid/v1")
    status = tool_search.main(["--model", "gpt-5.4"])
    output, errors = capsys.readouterr()
    assert status == 1
    assert no_network, "the real client never tried to connect"
    assert errors.startswith("error: openai: the request for model 'gpt-5.4' failed")
    assert errors.count("\n") == 1 and "Traceback" not in errors
    assert "answer" not in output


def test_bedrock_needs_a_model(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        tool_search.main(["--bedrock"])
    assert exit.value.code == 2
    assert "--bedrock makes real calls and needs --model" in capsys.readouterr().err


def test_help_has_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        tool_search.main(["--help"])
    assert exit.value.code == 0
    text = capsys.readouterr().out
    assert "python -m examples.quickstart.tool_search --provider anthropic" in text
    assert "OPENAI_API_KEY=... python -m examples.quickstart.tool_search --model" in text
    assert "--bedrock" in text


# --- the recording guards itself ----------------------------------------------------------


@pytest.fixture
def recordings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the recordings that a test may edit, used instead of the committed ones."""
    copy = tmp_path / "recordings"
    shutil.copytree(tool_search.RECORDINGS, copy)
    monkeypatch.setattr(tool_search, "RECORDINGS", copy)
    return copy


def edit(path: Path, change: Any) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_a_request_that_no_longer_matches_the_recording_stops_the_run(
    recordings: Path, no_network: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # As if the recording had been made when the forecast was still sent up front.
    edit(
        recordings / "openai.json",
        lambda d: d["exchanges"][0]["request"]["tools"].insert(0, "weather_forecast"),
    )
    status = tool_search.main([])
    output, errors = capsys.readouterr()
    assert status == 1
    assert errors.startswith("error: the recording ")
    assert "cannot answer this run" in errors
    assert "request 1 does not match the recording in " in errors
    assert (
        'tools item 1: the run sent "calendar_list_events", the recording has "weather_forecast"'
    ) in errors
    assert '"weather_forecast",' in errors.split("the recording answers:")[1]
    assert "answer" not in [label for label, _ in trace(output)]


def test_a_missing_exchange_is_reported(
    recordings: Path, no_network: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    edit(recordings / "anthropic.json", lambda d: d["exchanges"].pop())
    assert tool_search.main(["--provider", "anthropic"]) == 1
    errors = capsys.readouterr().err
    assert "request 2 was not recorded: the recording in " in errors
    assert "holds 1 exchange(s), and the run asked for another model reply" in errors


def test_an_unused_exchange_is_reported(
    recordings: Path, no_network: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    edit(recordings / "anthropic.json", lambda d: d["exchanges"].append(d["exchanges"][-1]))
    assert tool_search.main(["--provider", "anthropic"]) == 1
    assert "the run ended after 2 of the 3 recorded exchanges" in capsys.readouterr().err


def test_a_reply_not_in_the_wire_shape_is_refused_with_the_sdk_types(
    recordings: Path, no_network: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    edit(recordings / "openai.json", lambda d: d["exchanges"][0]["response"].pop("id"))
    status = tool_search.main([])
    errors = capsys.readouterr().err
    assert status == 1
    assert "cannot answer this run" in errors
    assert "reply 1 in " in errors and "is not a valid Responses API reply" in errors
    assert "validation error for Response" in errors and "Field required" in errors


def test_the_transport_refuses_a_first_request_that_reveals_the_forecast() -> None:
    recorded = tool_search.player(tool_search.load_recording("openai"))
    body = {
        "model": "gpt-5.4",
        "input": [{"role": "user", "content": tool_search.PROMPT}],
        "tools": [{"type": "function", "name": "weather_forecast", "parameters": {}}],
    }
    request = httpx2.Request("POST", "http://recording.invalid/v1/responses", json=body)
    reply = recorded.handler(request)
    assert reply.status_code == 400
    assert "request 1: the first request has no tool_search tool" in recorded.problems
    assert (
        "request 1: the first request mentions weather_forecast, which must be withheld"
        in recorded.problems
    )
    assert recorded.served == 0
