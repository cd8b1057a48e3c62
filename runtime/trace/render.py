"""A run's trace for people: one line per step, a label column, styled with ``rich``.

``rich`` is needed only here (``pip install 'agentgen[trace]'``): importing the runtime never
imports it. The text is the same with or without a terminal (``Text.plain``), so it can be
logged, compared in tests or pasted in an issue::

    user     What's the weather in Tokyo today?
    search   "weather forecast"
    loaded   weather.forecast
    call     weather.forecast {"city":"Tokyo"}
    result   weather.forecast → {"city":"Tokyo","conditions":"sunny",...}
    answer   It's sunny in Tokyo today.
    usage    1,234 input + 56 output tokens, the sum of 2 model responses (...)
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any, TextIO

from agentgen.runtime.messages import Message
from agentgen.runtime.model_client import ToolDefinition
from agentgen.runtime.trace.events import HasTranscript, TraceEvent, events
from agentgen.runtime.visible import visible

if TYPE_CHECKING:
    from rich.text import Text

__all__ = ["LABEL_WIDTH", "print_trace", "render"]

#: The label column's width; continuation lines are indented past it.
LABEL_WIDTH = 8


_STYLES = {
    "system": "dim",
    "user": "bold",
    "tools": "magenta",
    "search": "cyan",
    "loaded": "green",
    "call": "yellow",
    "result": "",
    "model": "italic",
    "answer": "bold green",
    "usage": "dim",
}


def _rich() -> type[Text]:
    try:
        from rich.text import Text
    except ImportError:
        raise ImportError(
            "rendering a run's trace needs rich: pip install 'agentgen[trace]' (or read the "
            "steps without styling from agentgen.runtime.trace.events)"
        ) from None
    return Text


def render(
    source: HasTranscript | Sequence[Message], *, tools: Sequence[ToolDefinition] | None = None
) -> Text:
    """The trace of a run's outcome or of a transcript, as styled text (``.plain`` for the
    text alone). ``tools``: the first request's advertised definitions, to show the catalog."""
    text_type = _rich()
    text = text_type()
    for event in events(source, tools=tools):
        _line(text, event)
    return text


def _line(text: Text, event: TraceEvent) -> None:
    for piece, style in _pieces(event):
        text.append(piece, style=style)


def _pieces(event: TraceEvent) -> Iterator[tuple[str, str]]:
    """One event's lines, as pieces of text and their styles: the label, then its text (each
    line after the first indented past the label column)."""
    style = _STYLES[event.kind]
    if event.kind == "result" and event.is_error:
        style = "red"
    # Models and tools wrote it: what rich strips (bell, backspace, carriage return...) is
    # stripped, and every other control or format character (ESC, bidi overrides) prints as
    # its escape, so no escape sequence reaches the terminal (agentgen.runtime.visible).
    control = _control_codes()
    lines = [visible(control.sub("", line), "\t") for line in event.text.split("\n")]
    yield f"{event.kind:<{LABEL_WIDTH}} ", f"bold {style}".strip()
    yield lines[0], style
    yield "\n", ""
    for line in lines[1:]:
        yield " " * (LABEL_WIDTH + 1), ""
        yield line, style
        yield "\n", ""


def print_trace(
    source: HasTranscript | Sequence[Message],
    *,
    file: TextIO | None = None,
    tools: Sequence[ToolDefinition] | None = None,
    color: bool | None = None,
) -> None:
    """Print the trace to ``file`` (standard output by default). Lines are never wrapped;
    colors are used on a terminal unless ``color`` says otherwise."""
    _rich()
    from rich.console import Console

    options: dict[str, Any] = {"force_terminal": True} if color else {}
    if color is False:
        options["color_system"] = None  # no escape codes at all, bold included
    console = Console(file=file, soft_wrap=True, highlight=False, **options)
    if console.color_system is not None:
        console.print(render(source, tools=tools), end="")
        return
    # No styling (a file, a pipe, --no-color): the same text, written as it is made. rich would
    # build the whole trace as one Text, strip control codes from every character twice and
    # split it into lines again: ~4 s of CPU for a 16 MB transcript, for text it leaves as is
    # (but for tabs, which it expands: an event that has some is still printed by rich).
    control = _control_codes()
    text_type = _rich()
    out = console.file
    for event in events(source, tools=tools):
        if "\t" in event.text:  # rich expands tabs to its tab stops, by the cells of each line
            line = text_type()
            _line(line, event)
            with console.capture() as captured:  # written by _write, as every other line
                console.print(line, end="")
            _write(out, captured.get())
        else:
            _write(out, "".join(control.sub("", piece) for piece, _ in _pieces(event)))
    out.flush()


def _write(out: IO[str], text: str) -> None:
    """Write ``text``; what the stream's encoding cannot hold (a file written in cp1252, the
    trace's own arrows included) as Python escapes: a bare ``UnicodeEncodeError`` ended the
    trace at the first such character."""
    try:
        out.write(text)
    except UnicodeEncodeError:
        encoding = getattr(out, "encoding", None) or "utf-8"
        out.write(text.encode(encoding, "backslashreplace").decode(encoding))


@functools.cache
def _control_codes() -> re.Pattern[str]:
    """What rich strips from the text it prints (bell, backspace, carriage return...: they
    would move the cursor over what is shown), found at C speed: rich's own ``str.translate``
    with a table looks every character up."""
    from rich.control import STRIP_CONTROL_CODES

    return re.compile("[" + re.escape("".join(map(chr, STRIP_CONTROL_CODES))) + "]")
