"""A reader that goes away (``agentgen explain design.py | head -1``) ends the command quietly.

Each command runs in its own process with the read end of its output pipe already closed, so
its first write fails with EPIPE as it does after ``head`` has read its line. The command must
exit 141 (128 + SIGPIPE, what a shell reports for ``cat`` there), not 1 (an invalid design), and
print nothing: no traceback, no "Exception ignored" from the interpreter's last flush.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentgen.codegen.exits import EXIT_BROKEN_PIPE
from agentgen.runtime.messages import Message, TextPart
from agentgen.runtime.transcript import dumps

ROOT = Path(__file__).resolve().parents[2]
DESIGN = str(ROOT / "examples" / "records" / "design.py")
AGENTGEN = str(Path(sys.executable).with_name("agentgen"))


def _closed_pipe() -> int:
    """The write end of a pipe nobody reads any more."""
    read, write = os.pipe()
    os.close(read)
    return write


def _run(command: list[str], *, close: str, cwd: Path | None = None) -> tuple[int, str]:
    """Run ``command`` with its stdout (``close="stdout"``), its stderr, or both on a closed
    pipe; return its exit code and what it wrote on the stream left open (stderr, else '')."""
    closed = _closed_pipe()
    try:
        done = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            stdout=closed if close in ("stdout", "both") else subprocess.PIPE,
            stderr=closed if close in ("stderr", "both") else subprocess.PIPE,
            cwd=cwd,
            # Buffered, as a user's shell runs it: unbuffered, a failed write leaves nothing
            # for the interpreter's last flush to fail on, and that noise would go unseen.
            env={k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"},
            timeout=120,
            check=False,
        )
    finally:
        os.close(closed)
    left = done.stderr if close == "stdout" else done.stdout if close == "stderr" else b""
    return done.returncode, (left or b"").decode()


def _transcript(tmp_path: Path) -> str:
    stored = tmp_path / "transcript.json"
    stored.write_text(
        dumps([Message("user", (TextPart("hello"),)), Message("assistant", (TextPart("hi"),))]),
        encoding="utf-8",
    )
    return str(stored)


def _eval_files(tmp_path: Path) -> tuple[str, str]:
    catalog = tmp_path / "tools.json"
    catalog.write_text(
        json.dumps(
            [
                {"name": "find_customer", "description": "Find a customer by name."},
                {"name": "send_invoice", "description": "Send an invoice to a customer."},
            ]
        ),
        encoding="utf-8",
    )
    queries = tmp_path / "queries.json"
    queries.write_text(
        json.dumps([{"query": "find a customer", "expected": ["find_customer"]}]),
        encoding="utf-8",
    )
    return str(catalog), str(queries)


COMMANDS = {
    "help": lambda tmp: ["--help"],
    "version": lambda tmp: ["--version"],
    "command help": lambda tmp: ["explain", "--help"],
    "validate": lambda tmp: ["validate", DESIGN],
    "explain": lambda tmp: ["explain", DESIGN],
    "explain --json": lambda tmp: ["explain", DESIGN, "--json"],
    "search": lambda tmp: ["search", DESIGN, "--agent", "assistant.assistant", "records"],
    "eval-search": lambda tmp: ["eval-search", *_eval_files(tmp)],
    "trace": lambda tmp: ["trace", _transcript(tmp)],
    "gen": lambda tmp: ["gen", DESIGN, "-o", str(tmp / "gen"), "--no-cache"],
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_closed_stdout_exits_141_quietly(name: str, tmp_path: Path) -> None:
    code, err = _run([AGENTGEN, *COMMANDS[name](tmp_path)], close="stdout", cwd=tmp_path)
    assert (code, err) == (EXIT_BROKEN_PIPE, "")


def test_a_closed_stderr_while_a_usage_error_prints_exits_141_quietly(tmp_path: Path) -> None:
    """click prints a usage error after the command has ended; the pipe breaks there."""
    code, out = _run([AGENTGEN, "search", DESIGN, "records"], close="stderr", cwd=tmp_path)
    assert (code, out) == (EXIT_BROKEN_PIPE, "")


def test_both_streams_on_one_closed_pipe_exit_141(tmp_path: Path) -> None:
    """``agentgen ... 2>&1 | head -1``."""
    code, _ = _run([AGENTGEN, "explain", DESIGN], close="both", cwd=tmp_path)
    assert code == EXIT_BROKEN_PIPE


@pytest.mark.parametrize("args", [["explain", DESIGN], ["--help"]])
def test_the_command_group_called_directly_leaves_no_noise_at_interpreter_exit(
    args: list[str], tmp_path: Path
) -> None:
    """Without the console script's ``os._exit``, the interpreter flushes its streams at exit:
    a stream left pointing at the closed pipe printed "Exception ignored ... BrokenPipeError"."""
    script = "from agentgen.codegen.cli import main; main()"
    code, err = _run([sys.executable, "-c", script, *args], close="stdout", cwd=tmp_path)
    assert (code, err) == (EXIT_BROKEN_PIPE, "")
