"""Run the quickstart agent end to end and print what happens at each step.

    python -m examples.quickstart.tool_search                        # offline, OpenAI
    python -m examples.quickstart.tool_search --provider anthropic   # offline, Anthropic
    python -m examples.quickstart.tool_search --model gpt-5.4        # real, billable calls

The agent ``quickstart.chat`` (see ``design.py``) is asked about the weather in Tokyo. Its
forecast tool is deferred, so the model has to search for it: the adapter answers (OpenAI) or
Claude runs (Anthropic) the search, the forecast tool is loaded, the model calls it, the
runtime executes the generated typed executor below and the model answers. The trace
(``agentgen.runtime.trace``, the same ``agentgen trace transcript.json`` prints for a stored
transcript) shows the search query, the tools loaded, each call and its result, the answer and
the token usage.

Offline (the default) needs no credentials and sends nothing over the network, yet it runs
the same code as production: the real SDK clients and the real adapters build and send every
request, and ``agentgen.runtime.testing``'s recorded provider answers in process (an
``httpx2.MockTransport``) with the replies stored under ``recordings/``. Those replies are
written in each API's exact wire shape, and each is validated with the SDK's public response
type before it is served. Each recorded exchange also stores a summary of the request it
answers; a request that no longer matches it -- because the adapter or the design changed --
stops the run with both summaries, instead of replaying answers to questions nobody asked.
``--model`` makes real calls with the provider's usual environment variables.

The forecast executor always returns one fixed value, :data:`TOKYO`: the quickstart shows how a
deferred tool is found and run, not a weather service.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TextIO

from agentgen.runtime import (
    ModelClient,
    ModelPlanner,
    ModelRequest,
    ModelResponse,
    Runtime,
    ToolContext,
    ToolDefinition,
    Usage,
)
from agentgen.runtime.adapters import ModelError
from agentgen.runtime.testing import RecordedProvider, Recording, RecordingError
from agentgen.runtime.trace import events, print_trace
from examples.quickstart.gen.quickstart.agents import chat
from examples.quickstart.gen.quickstart.toolsets.calendar import types as calendar_types
from examples.quickstart.gen.quickstart.toolsets.currency import types as currency_types
from examples.quickstart.gen.quickstart.toolsets.weather import types as weather_types

if TYPE_CHECKING:
    import httpx2

Provider = Literal["openai", "anthropic"]

RECORDINGS = Path(__file__).resolve().parent / "recordings"

#: What the user asks. Offline runs replay a conversation recorded for exactly this question.
PROMPT = "What's the weather in Tokyo today?"

#: Sent as the system prompt: models answer from their own knowledge unless told that more
#: tools can be found than the ones they see.
SYSTEM = (
    "You are a concise assistant. Besides the tools you can see, more can be found with tool "
    "search; use them rather than guessing."
)

#: The forecast tool's one fixed answer, whatever city it is asked about.
TOKYO = weather_types.Forecast(
    city="Tokyo",
    conditions="sunny",
    temperature_c=24,
    wind="light breeze",
    summary="Tokyo: sunny, 24°C, light breeze",
)

#: Environment variables that real calls need, by provider (direct APIs).
API_KEY_VARIABLES: Mapping[Provider, str] = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
}

NO_SAVINGS_NOTE = (
    "note     one deferred tool in a five-tool catalog shows how tool search works, not what it "
    "saves:\n         the first request is about as large either way. bench/first_request.py "
    "measures the first\n         request with every tool eager versus deferred for 10, 100 "
    "and 1,000 tools (see bench/README.md)."
)


class ConfigurationError(Exception):
    """A problem with how the quickstart was invoked or configured (exit code 2)."""


# --- the application's executors ---------------------------------------------------------


class Weather:
    """Implements the generated ``WeatherExecutor``."""

    def __init__(self) -> None:
        self.cities: list[str] = []

    async def forecast(
        self, args: weather_types.ForecastArgs, context: ToolContext
    ) -> weather_types.Forecast:
        # A demo has no weather service: every city gets the documented fixed example.
        self.cities.append(args.city)
        return TOKYO


class Calendar:
    """Implements the generated ``CalendarExecutor`` with one fixed sample day."""

    async def list_events(
        self, args: calendar_types.ListEventsArgs, context: ToolContext
    ) -> calendar_types.Events:
        start, end = f"{args.day}T10:00:00+09:00", f"{args.day}T10:30:00+09:00"
        return calendar_types.Events(
            events=[calendar_types.Event(id="evt_1", title="Team sync", start=start, end=end)]
        )

    async def create_event(
        self, args: calendar_types.CreateEventArgs, context: ToolContext
    ) -> calendar_types.Event:
        return calendar_types.Event(id="evt_2", title=args.title, start=args.start, end=args.end)


class Currency:
    """Implements the generated ``CurrencyExecutor`` with one fixed sample rate."""

    RATE = 150.0

    async def convert(
        self, args: currency_types.ConvertArgs, context: ToolContext
    ) -> currency_types.Conversion:
        return currency_types.Conversion(
            amount=round(args.amount * self.RATE, 2), currency=args.target, rate=self.RATE
        )

    async def rate_history(
        self, args: currency_types.RatesArgs, context: ToolContext
    ) -> currency_types.RateHistory:
        return currency_types.RateHistory(base=args.base, rates={"JPY": [149.5, 150.0]})


# --- the trace ---------------------------------------------------------------------------


@dataclass
class FirstRequest:
    """Keeps the tools the first model request advertised: the catalog the trace shows before
    the first search (a stored transcript does not hold it)."""

    inner: ModelClient
    tools: tuple[ToolDefinition, ...] | None = None

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if self.tools is None:
            self.tools = tuple(request.tools)
        return await self.inner.complete(request)


# --- offline: recorded provider replies ------------------------------------------------------


def _openai_invariants(index: int, request: httpx2.Request) -> list[str]:
    """What the demo is about, checked whatever the recording says."""
    body = json.loads(request.content)
    if index > 0:
        return []
    problems = []
    if not any(tool.get("type") == "tool_search" for tool in body.get("tools", [])):
        problems.append("the first request has no tool_search tool")
    if "weather_forecast" in request.content.decode():
        problems.append("the first request mentions weather_forecast, which must be withheld")
    return problems


def _anthropic_invariants(index: int, request: httpx2.Request) -> list[str]:
    body = json.loads(request.content)
    if index > 0:
        return []
    tools = {tool["name"]: tool for tool in body.get("tools", [])}
    problems = []
    if not tools.get("weather_forecast", {}).get("defer_loading"):
        problems.append("the first request does not send weather_forecast with defer_loading")
    if "tool_search_tool_regex" not in tools:
        problems.append("the first request has no tool_search_tool_regex tool")
    return problems


_INVARIANTS: Mapping[Provider, Callable[[int, httpx2.Request], list[str]]] = {
    "openai": _openai_invariants,
    "anthropic": _anthropic_invariants,
}


def load_recording(provider: Provider) -> Recording:
    """The recorded conversation of ``provider`` for :data:`PROMPT`."""
    return Recording.load(RECORDINGS / f"{provider}.json", provider)


def player(recording: Recording) -> RecordedProvider:
    """Plays ``recording`` to the real SDK client and adapter (agentgen.runtime.testing),
    insisting on what the demo is about whatever the recording says."""
    provider: Provider = "openai" if recording.provider == "openai" else "anthropic"
    return recording.player(check=_INVARIANTS[provider])


# --- building the model client -----------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    provider: Provider
    model: str | None
    bedrock: bool

    @property
    def offline(self) -> bool:
        return self.model is None


def _require_env(*names: str) -> str:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    raise ConfigurationError(
        f"{names[0]} is not set: export it for real calls, or leave out --model to replay the "
        "offline recording"
    )


def live_model(options: Options) -> ModelClient:
    """The real adapter over the SDK's default client, configured from the environment.

    Variables are checked before any client is built, so a missing one is reported by name
    instead of surfacing as an SDK error after a network round trip.
    """
    if options.bedrock:
        region = _require_env("AWS_REGION", "AWS_DEFAULT_REGION")
        if options.provider == "openai":
            from agentgen.runtime import OpenAIResponsesModel

            return OpenAIResponsesModel.bedrock(region=region)
        from anthropic import AsyncAnthropicBedrock

        from agentgen.runtime import AnthropicMessagesModel

        return AnthropicMessagesModel(AsyncAnthropicBedrock(aws_region=region))
    _require_env(API_KEY_VARIABLES[options.provider])
    if options.provider == "openai":
        from openai import AsyncOpenAI

        from agentgen.runtime import OpenAIResponsesModel

        return OpenAIResponsesModel(AsyncOpenAI())
    from anthropic import AsyncAnthropic

    from agentgen.runtime import AnthropicMessagesModel

    return AnthropicMessagesModel(AsyncAnthropic())


# --- running -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class QuickstartResult:
    answer: str
    usage: Usage
    responses: int
    cities: tuple[str, ...]


async def run_quickstart(
    client: ModelClient, *, provider: Provider, model: str, out: TextIO, prompt: str = PROMPT
) -> QuickstartResult:
    """Wire the runtime, the generated agent and the executors, run one turn, print the trace
    (``agentgen.runtime.trace``: everything it shows comes from the run's transcript, the
    search records the adapter keeps in message metadata and the usage the planner records,
    so it reads the same for offline and real runs)."""
    first = FirstRequest(client)
    weather = Weather()
    rt = Runtime()
    rt.register_model(provider, first)
    chat.register_chat_agent(
        rt,
        chat.ChatAgentConfig(
            planner=ModelPlanner(provider, model=model, system=SYSTEM, max_tokens=2048),
            weather_executor=weather,
            calendar_executor=Calendar(),
            currency_executor=Currency(),
        ),
    )
    outcome = await chat.new_client(rt).run(prompt)
    print_trace(outcome, file=out, tools=first.tools)
    responses = [u for event in events(outcome) if event.kind == "usage" for u in event.usage]
    return QuickstartResult(
        outcome.final_text, outcome.usage, len(responses), tuple(weather.cities)
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m examples.quickstart.tool_search",
        description=(
            "Ask the quickstart agent about the weather in Tokyo. Its forecast tool is "
            "deferred, so the model finds it by tool search; the trace shows each step. "
            "Without --model the run is offline: the real adapters talk to recorded provider "
            "replies through an in-process transport (no credentials, no network)."
        ),
        epilog=(
            "examples:\n"
            "  python -m examples.quickstart.tool_search\n"
            "      offline, OpenAI Responses recording\n"
            "  python -m examples.quickstart.tool_search --provider anthropic\n"
            "      offline, Anthropic Messages recording\n"
            "  OPENAI_API_KEY=... python -m examples.quickstart.tool_search --model gpt-5.4\n"
            "      real, billable calls to OpenAI\n"
            "  ANTHROPIC_API_KEY=... python -m examples.quickstart.tool_search \\\n"
            "      --provider anthropic --model claude-opus-4-7\n"
            "      real, billable calls to Anthropic\n"
            "  AWS_REGION=us-west-2 python -m examples.quickstart.tool_search \\\n"
            "      --provider anthropic --bedrock --model BEDROCK_MODEL_ID\n"
            "      real, billable calls through Amazon Bedrock (AWS credentials as the SDK "
            "reads them)\n"
            "\n"
            "exit status: 0 answered, 1 the run failed, 2 usage or missing configuration"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--provider",
        choices=("openai", "anthropic"),
        default="openai",
        help="which adapter to run (default: openai)",
    )
    parser.add_argument(
        "--model",
        metavar="ID",
        help="make real, billable calls to this model instead of replaying the recording",
    )
    parser.add_argument(
        "--bedrock",
        action="store_true",
        help="with --model: call the provider's models through Amazon Bedrock",
    )
    return parser


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    """Run the quickstart and return the exit status; errors go to stderr, without traceback."""
    out = out or sys.stdout
    parser = _parser()
    args = parser.parse_args(argv)
    options = Options(args.provider, args.model, args.bedrock)
    if options.bedrock and options.offline:
        parser.error("--bedrock makes real calls and needs --model (the recordings are offline)")
    recorded: RecordedProvider | None = None
    try:
        if options.offline:
            recording = load_recording(options.provider)
            recorded = player(recording)
            client = recorded.model()
            model, prompt = recording.model, recording.prompt
            where = f"offline, no credentials: replaying {_shown(_path(recording))}"
        else:
            client = live_model(options)
            model, prompt = options.model or "", PROMPT
            where = "real, billable calls" + (" through Amazon Bedrock" if options.bedrock else "")
    except ConfigurationError as exc:
        return _fail(str(exc), 2)
    except ImportError as exc:
        extras = "openai,anthropic,bedrock" if options.bedrock else "openai,anthropic"
        return _fail(
            f"{exc.name or 'a provider SDK'} is not installed: pip install -e '.[{extras}]'", 2
        )
    except RecordingError as exc:
        return _fail(str(exc), 1)

    print(f"agentgen quickstart: agent {chat.AGENT_ID}, {options.provider} model {model}", file=out)
    print(f"({where})", file=out)
    print(file=out)
    try:
        result = asyncio.run(
            run_quickstart(client, provider=options.provider, model=model, out=out, prompt=prompt)
        )
    except ModelError as exc:
        if recorded is None:
            return _fail(str(exc), 1)
        path = _shown(_path(recorded.recording))
        if recorded.problems:
            problems = "\n".join(recorded.problems)
            return _fail(f"the recording {path} cannot answer this run:\n{problems}", 1)
        return _fail(f"{exc} (while replaying {path}; caused by {_causes(exc)})", 1)
    if recorded is not None and not recorded.finished:
        return _fail(
            f"the run ended after {recorded.served} of the {len(recorded.recording.exchanges)} "
            f"recorded exchanges in {_shown(_path(recorded.recording))}",
            1,
        )
    if not result.answer:
        return _fail("the model ended the run without an answer", 1)
    print(file=out)
    print(NO_SAVINGS_NOTE, file=out)
    return 0


def _fail(message: str, status: int) -> int:
    print(f"error: {message}", file=sys.stderr)
    return status


def _causes(exc: BaseException) -> str:
    """The chain of exceptions behind ``exc`` (e.g. the SDK's validation error and its detail)."""
    causes = []
    cause = exc.__cause__
    while cause is not None:
        causes.append(f"{type(cause).__name__}: {cause}")
        cause = cause.__cause__
    return "; caused by ".join(causes) or "no further detail"


def _path(recording: Recording) -> Path:
    return recording.path or RECORDINGS / f"{recording.provider}.json"


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # the reader went away (`... | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
