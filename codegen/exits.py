"""How ``agentgen`` commands end: exit codes, and the message of a command that cannot go on.

Exit codes: 0 success; 1 the design is invalid or its own code (a design's, a worker's
``--app`` factory) raised; 2 something the command was given cannot be used (a file, address or
namespace: missing, unreadable, unreachable, in use, not what it should hold), the command line
is wrong, or the environment cannot be used (an optional extra not installed, the installed
search stemmer, an OpenTelemetry variable naming nothing): ``unusable`` prints it; 3 a bug in
agentgen; 130 interrupted (Ctrl-C), as shells report a command SIGINT ended; 141 the reader of
the output went away (``agentgen explain ... | head -1``), as shells report a command SIGPIPE
ended.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import click

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_BUG",
    "EXIT_INTERRUPTED",
    "EXIT_INVALID",
    "EXIT_UNUSABLE",
    "quiet_closed_output",
    "unusable",
]

EXIT_INVALID = 1
EXIT_UNUSABLE = 2
EXIT_BUG = 3
#: Ctrl-C: click's "Aborted!" exited 1, which says "the design is invalid" to a script.
EXIT_INTERRUPTED = 130
#: The reader went away (``| head``): 128 + SIGPIPE, what a shell reports for ``cat`` or ``grep``
#: there, so ``set -o pipefail`` treats agentgen as it treats them. It exited 1, which says "the
#: design is invalid" to a script. (Python ignores SIGPIPE, so the code is given, not a signal.)
EXIT_BROKEN_PIPE = 141


def unusable(message: str) -> NoReturn:
    """Something the command was given cannot be used: ``error: message`` on stderr, exit 2.
    Not click's usage error, whose usage banner would say the command line is wrong when the
    command line is right and the file (or address, or store) it names is not."""
    click.echo(f"error: {message}", err=True)
    sys.exit(EXIT_UNUSABLE)


def quiet_closed_output() -> None:
    """After a broken pipe, let the process end without another word: the output still buffered
    is delivered where its stream is open, and standard output (with standard error when it is
    the closed one) is pointed at ``os.devnull``, so that no later flush (the console script's,
    or the interpreter's at exit: "Exception ignored ... BrokenPipeError") fails again.

    The file descriptor is redirected, not only ``sys.stdout`` replaced: the original stream
    object, still buffering what could not be written, is flushed when it is collected.
    """
    for stream, always in ((sys.stdout, True), (sys.stderr, False)):
        try:
            stream.flush()
        except OSError:
            closed = True
        else:
            closed = always
        if not closed:
            continue
        try:
            fd = stream.fileno()
        except (OSError, ValueError):  # an in-memory stream (click's test runner): no descriptor
            continue
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)
