"""``agentgen trace``: a stored transcript's run, step by step, for people.

Reads a transcript stored with ``agentgen.runtime.transcript.dumps`` (a JSON list of messages,
search records and usage included) and prints the trace ``agentgen.runtime.trace`` renders:
the searches and what they loaded, each call with its arguments and result, the answer and
what each model response cost.

A transcript it cannot use (unreadable, not UTF-8, not a stored transcript, holding no run,
malformed records) exits 2 with ``error: ...``, as every command given a file it cannot use;
a wrong command line (a missing file included) is click's usage error, exit 2 too.
"""

from __future__ import annotations

import sys
from typing import TextIO

import click

from agentgen.codegen.exits import unusable

__all__ = ["trace"]


@click.command("trace")
# utf-8-sig: a byte order mark, which some editors and Windows tools write, is not text.
@click.argument("transcript", type=click.File("r", encoding="utf-8-sig"))
@click.option(
    "--color/--no-color",
    default=None,
    help="Style the trace (default: on a terminal only).",
)
def trace(transcript: TextIO, color: bool | None) -> None:
    """Print the run stored in TRANSCRIPT (a JSON transcript; - reads standard input).

    \b
    Example:
      agentgen trace transcript.json
    """
    from agentgen.runtime.trace import TraceError, print_trace
    from agentgen.runtime.transcript import loads

    name = getattr(transcript, "name", "<stdin>")  # a wrapped stream may have none
    try:
        text = transcript.read()
    except UnicodeDecodeError as exc:
        unusable(
            f"{name}: not UTF-8 text (byte {exc.start}: {exc.reason}); a stored transcript is "
            "the UTF-8 JSON agentgen.runtime.transcript.dumps writes"
        )
    if not text.strip():
        unusable(
            f"{name}: is empty; write a stored transcript with "
            "agentgen.runtime.transcript.dumps(outcome.transcript)"
        )
    try:
        messages = loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        unusable(
            f"{name}: not a stored transcript ({exc}); write one with "
            "agentgen.runtime.transcript.dumps(outcome.transcript)"
        )
    if not messages:
        # An empty trace exits 0 and prints nothing, which reads as "the command did nothing"
        # rather than "this file holds no run": say so, with the exit code of an empty file.
        unusable(
            f"{name}: holds no messages (an empty JSON list); store a run's transcript with "
            "agentgen.runtime.transcript.dumps(outcome.transcript) after the run"
        )
    try:
        print_trace(messages, file=sys.stdout, color=color)
    except TraceError as exc:
        unusable(f"{name}: {exc}")
    except ImportError as exc:  # rich, the optional renderer: the environment, as the stemmer's
        unusable(str(exc))
