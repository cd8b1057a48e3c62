"""`agentgen trace` on a long run's transcript: where the CPU goes, and what printing costs.

A synthetic 16 MB stored transcript (a question, a call with its ~4 KB JSON result and a model
response with usage, repeated) is read and printed to memory. Unstyled printing (a file, a
pipe, --no-color) writes the text directly; it is compared with printing the same trace as one
rich Text through rich's Console (how it was printed before, and still is with colors), in the
same run. CPU seconds, median of three.

    python bench/trace_print.py [--mb 16]
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import time
from collections.abc import Callable

from agentgen.runtime.messages import Message, TextPart, ToolCallPart, ToolResultPart
from agentgen.runtime.model_client import USAGE_METADATA_KEY
from agentgen.runtime.trace import events, print_trace, render
from agentgen.runtime.transcript import dumps, loads

SIZE = 16_000_000


def transcript(size_limit: int = SIZE) -> str:
    rows = [{"id": i, "city": "Tokyo", "note": "sunny and mild " * 3} for i in range(60)]
    result = json.dumps({"rows": rows})
    usage = {"model": "gpt-5.4", "input_tokens": 1412, "output_tokens": 118}
    messages: list[Message] = []
    size, turn = 0, 0
    while size < size_limit:
        call = f"call_{turn}"
        exchange = [
            Message.user(f"What's the weather in Tokyo, day {turn}?"),
            Message(
                "assistant",
                (ToolCallPart(call, "weather.forecast", '{"city":"Tokyo"}'),),
                {USAGE_METADATA_KEY: usage},
            ),
            Message("tool", (ToolResultPart(call, "weather.forecast", result),)),
            Message("assistant", (TextPart("It's sunny in Tokyo."),), {USAGE_METADATA_KEY: usage}),
        ]
        messages.extend(exchange)
        size += len(dumps(exchange))
        turn += 1
    return dumps(messages)


def cpu(work: Callable[[], object]) -> float:
    times = []
    for _ in range(3):
        started = time.process_time()
        work()
        times.append(time.process_time() - started)
    return statistics.median(times)


def main() -> None:
    from rich.console import Console

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--mb", type=float, default=SIZE / 1e6, help="transcript size in MB (default: 16)"
    )
    text = transcript(int(parser.parse_args().mb * 1e6))
    messages = loads(text)

    def through_rich() -> None:
        console = Console(file=io.StringIO(), soft_wrap=True, highlight=False, color_system=None)
        console.print(render(messages), end="")

    on = True
    rows = [
        ("read (transcript.loads)", cpu(lambda: loads(text))),
        ("events", cpu(lambda: events(messages))),
        ("print, unstyled (direct)", cpu(lambda: print_trace(messages, file=io.StringIO()))),
        ("print, unstyled through rich (before)", cpu(through_rich)),
        ("print, styled (rich)", cpu(lambda: print_trace(messages, file=io.StringIO(), color=on))),
    ]
    print(f"{len(text) / 1e6:.1f} MB, {len(messages):,} messages\n")
    print("| step | CPU s (median of 3) |\n|---|---|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.2f} |")
    direct, before = rows[2][1], rows[3][1]
    print(f"\nunstyled printing: {before / direct:.1f}x less CPU than through rich")


if __name__ == "__main__":
    main()
