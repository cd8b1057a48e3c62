"""How ``agentgen`` commands end: exit codes, and the message of a command that cannot go on.

Exit codes: 0 success; 1 the design is invalid or its own code raised; 2 a file or address the
command was given cannot be used (missing, unreadable, in use), the installed search stemmer
cannot be used, or the command line is wrong; 3 a bug in agentgen; 130 interrupted (Ctrl-C), as
shells report a command SIGINT ended.
"""

from __future__ import annotations

import sys
from typing import NoReturn

import click

__all__ = ["EXIT_BUG", "EXIT_INTERRUPTED", "EXIT_INVALID", "EXIT_UNUSABLE", "unusable"]

EXIT_INVALID = 1
EXIT_UNUSABLE = 2
EXIT_BUG = 3
#: Ctrl-C: click's "Aborted!" exited 1, which says "the design is invalid" to a script.
EXIT_INTERRUPTED = 130


def unusable(message: str) -> NoReturn:
    """Something the command was given cannot be used: ``error: message`` on stderr, exit 2.
    Not click's usage error, whose usage banner would say the command line is wrong when the
    command line is right and the file (or address, or store) it names is not."""
    click.echo(f"error: {message}", err=True)
    sys.exit(EXIT_UNUSABLE)
