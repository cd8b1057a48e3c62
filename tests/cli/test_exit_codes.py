"""Every subcommand exits as the exit-code table says (docs/troubleshooting.md, codegen/exits.py).

2: something the command was given cannot be used: a file (missing, unreadable, not what it
should hold), an address or namespace, or the environment (an optional extra not installed, an
OpenTelemetry variable naming nothing). 1 is kept for an invalid design, code of the user's own
that raised, and gen's refusals. ``agentgen trace`` exited 1 for a transcript it could not use,
and the worker for a server it could not reach, a namespace missing or the Temporal SDK absent;
``agentgen registry serve`` without its extra was "a bug in agentgen" (exit 3).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentgen.codegen.cli import main
from agentgen.codegen.exits import EXIT_UNUSABLE

ROOT = Path(__file__).resolve().parents[2]
DESIGN = str(ROOT / "examples" / "records" / "design.py")


def invoke(*args: str, stdin: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), input=stdin)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stderr


def _latin(tmp_path: Path) -> str:
    path = tmp_path / "latin.json"
    path.write_bytes(b"\xff\xfe[]")
    return str(path)


def _catalog(tmp_path: Path) -> str:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps([{"name": "find", "description": "Find a customer."}]))
    return str(path)


# One file each subcommand cannot use, and the words that name it.
UNUSABLE_FILES = {
    "validate": (lambda tmp: ["validate", str(tmp / "nope.py")], "does not exist"),
    "gen": (lambda tmp: ["gen", str(tmp / "nope.py")], "does not exist"),
    "explain": (lambda tmp: ["explain", str(tmp / "nope.py")], "does not exist"),
    "search": (lambda tmp: ["search", str(tmp / "nope.py"), "find"], "does not exist"),
    "eval-search catalog": (
        lambda tmp: ["eval-search", _latin(tmp), _catalog(tmp)],
        "not UTF-8 text",
    ),
    "eval-search queries": (
        lambda tmp: ["eval-search", _catalog(tmp), _latin(tmp)],
        "not UTF-8 text",
    ),
    "trace": (lambda tmp: ["trace", _latin(tmp)], "not UTF-8 text"),
    "trace missing": (lambda tmp: ["trace", str(tmp / "nope.json")], "No such file"),
    "registry serve": (
        lambda tmp: ["registry", "serve", "--store", f"sqlite:{_latin(tmp)}", "--port", "0"],
        "latin.json",
    ),
}


@pytest.mark.parametrize("name", list(UNUSABLE_FILES))
def test_a_file_the_command_cannot_use_exits_2(name: str, tmp_path: Path) -> None:
    args, words = UNUSABLE_FILES[name]
    code, err = invoke(*args(tmp_path))
    assert code == EXIT_UNUSABLE, err
    assert words in err
    assert "Traceback" not in err and "bug in agentgen" not in err


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "is empty"),
        ('{"role": "user"}', "not a stored transcript"),
        ("[]", "holds no messages"),
        (
            json.dumps(
                [
                    {
                        "role": "assistant",
                        "parts": [{"kind": "text", "text": "hi"}],
                        "metadata": {"agentgen.usage": {"model": "m", "input_tokens": -5}},
                    }
                ]
            ),
            "is malformed",
        ),
    ],
)
def test_a_transcript_trace_cannot_use_exits_2_as_other_unusable_files(
    text: str, words: str
) -> None:
    code, err = invoke("trace", "--no-color", "-", stdin=text)
    assert code == EXIT_UNUSABLE, err
    assert err.startswith("error: <stdin>: ") and words in err


@pytest.mark.parametrize(
    ("args", "modules", "words"),
    [
        (["trace", "-"], ["rich", "rich.text", "rich.console"], "pip install 'agentgen[trace]'"),
        (
            ["worker", "--task-queue", "q", "--app", "tests.cli.test_worker_cli:make_runtime"],
            ["agentgen.runtime.engines.temporal.worker"],
            "pip install 'agentgen[temporal]'",
        ),
        (["registry", "serve", "--port", "0"], ["uvicorn"], "pip install 'agentgen[registry]'"),
        (
            ["registry", "serve", "--port", "0", "--store", "redis://127.0.0.1:1/0"],
            ["redis", "redis.asyncio"],
            "pip install 'agentgen[registry]'",
        ),
    ],
)
def test_a_missing_optional_extra_exits_2_naming_what_to_install(
    args: list[str], modules: list[str], words: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The environment cannot be used, as for the stemmer: not an invalid design (1), and
    never a bug in agentgen (3)."""
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)  # importing it raises ImportError
    stdin = json.dumps([{"role": "user", "parts": [{"kind": "text", "text": "hi"}]}])
    code, err = invoke(*args, stdin=stdin)
    assert code == EXIT_UNUSABLE, err
    assert err.startswith("error: ") and words in err
    assert "Traceback" not in err


def test_a_design_file_that_is_valid_but_a_query_that_is_empty_is_a_usage_error() -> None:
    code, err = invoke("search", DESIGN, "--agent", "assistant.assistant", " ")
    assert code == 2 and "Usage:" in err
