"""``agentgen validate``: output format, exit codes, user tracebacks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentgen.codegen.cli import main

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    runner = CliRunner()
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        result = runner.invoke(main, list(args))
    finally:
        os.chdir(old)
    return result.exit_code, result.stdout, result.stderr


def test_valid_design_prints_a_summary() -> None:
    code, out, err = run("validate", str(ROOT / "examples/records/design.py"))
    assert code == 0, err
    assert "valid (1 service, 2 agents, 1 toolset, 3 tools, 0 registries)" in out


def test_every_error_is_reported_with_file_line_and_where(tmp_path: Path) -> None:
    (tmp_path / "design.py").write_text(
        "from agentgen.dsl import *\n"
        'Records = Toolset("records", lambda: Tool("lookup", "Look up."))\n'
        'with Service("svc"):\n'
        '    with Agent("a", "A."):\n'
        '        Use(Records, lambda: Deferred("serach"))\n'
        '    Agent("a", "Again.")\n'
    )
    code, out, err = run("validate", "design.py", cwd=tmp_path)
    assert code == 1
    assert out == ""
    assert err.splitlines() == [
        'design.py:5: service "svc" › agent "a" › Use(records): agent "svc.a" toolset '
        '"records": Deferred selects unknown tool "serach" (its tools: lookup)',
        """    Use(Records, lambda: Deferred("serach"))""",
        "                                  ^^^^^^^^",  # the name at fault
        'design.py:6: service "svc" › agent "a": agent name "a" duplicates an agent declared at '
        'design.py:4 within service "svc"',
        '    Agent("a", "Again.")',
        "          ^^^",
        "design.py: 2 design errors",
    ]
    assert "\x1b[" not in err  # no colour when not writing to a terminal


def test_missing_file_and_non_python_files_exit_2(tmp_path: Path) -> None:
    code, _, err = run("validate", str(tmp_path / "nope.py"))
    assert code == 2
    assert err == f"error: design file {tmp_path / 'nope.py'} does not exist\n"
    (tmp_path / "design.txt").write_text("Service('x')\n")
    code, _, err = run("validate", str(tmp_path / "design.txt"))
    assert (code, err.count("\n")) == (2, 1)
    assert "is not a Python file" in err
    (tmp_path / "broken.py").write_text("from agentgen.dsl import *\nService('x'\n")
    code, _, err = run("validate", str(tmp_path / "broken.py"))
    assert (code, err.count("\n")) == (2, 1)
    assert f"{tmp_path / 'broken.py'}:2: not valid Python:" in err
    code, _, err = run("validate", str(tmp_path))
    assert code == 2 and "is a directory" in err


def test_an_expression_too_deep_to_compile_is_an_unusable_file_not_a_bug(tmp_path: Path) -> None:
    # Python's compiler raised RecursionError, reported as a bug in agentgen (exit 3).
    (tmp_path / "deep.py").write_text("total = " + "1 + " * 300_000 + "1\n")
    code, _, err = run("validate", str(tmp_path / "deep.py"))
    assert (code, err) == (
        2,
        f"error: {tmp_path / 'deep.py'}: not valid Python: an expression is nested too deeply "
        "for Python to compile; split it into smaller statements\n",
    )


def test_user_exception_shows_only_user_frames(tmp_path: Path) -> None:
    (tmp_path / "helpers.py").write_text("def boom():\n    raise ValueError('no such record')\n")
    (tmp_path / "design.py").write_text(
        "from agentgen.dsl import *\n"
        "from helpers import boom\n"
        'Service("svc", lambda: Agent("a", "A.", lambda: boom()))\n'
    )
    code, _, err = run("validate", "design.py", cwd=tmp_path)
    assert code == 1
    assert "ValueError: no such record" in err
    assert 'File "design.py", line 3' in err
    assert "helpers.py" in err and "line 2, in boom" in err
    assert "agentgen" not in err.replace("error: the design raised an exception", "")
    assert "importlib" not in err


@pytest.mark.parametrize("args", [["--help"], ["validate", "--help"]])
def test_help(args: list[str]) -> None:
    code, out, _ = run(*args)
    assert code == 0 and "Usage:" in out


def test_console_script_runs_without_traceback(tmp_path: Path) -> None:
    (tmp_path / "design.py").write_text("from agentgen.dsl import *\nDeferred()\n")
    script = Path(sys.executable).with_name("agentgen")
    done = subprocess.run(
        [str(script), "validate", "design.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith(
        "design.py:2: Deferred is not valid at the top level of the design"
    )


@pytest.mark.parametrize("command", ["validate", "gen", "explain", "search"])
def test_type_problems_are_reported_with_dsl_errors_in_one_run(
    tmp_path: Path, command: str
) -> None:
    (tmp_path / "design.py").write_text(
        "from pydantic import BaseModel\n"
        "from agentgen.dsl import *\n"
        "class Raw(BaseModel):\n"
        "    data: bytes\n"
        'Records = Toolset("records", lambda: Tool("lookup", "Look up.", lambda: Args(Raw)))\n'
        "def mcp():\n"
        '    Tool("get", "Get.", lambda: Args({"type": "objekt"}))\n'
        'Weather = Toolset("weather", FromExternalMCP("srv", "weather"), mcp)\n'
        'with Service("svc"):\n'
        '    Agent("a", "A.", lambda: (Use(Records), Use(Weather), Deferred()))\n'
    )
    args = [command, "design.py"] + (["query"] if command == "search" else [])
    code, out, err = run(*args, cwd=tmp_path)
    assert (code, out) == (1, "")
    heads = [line for line in err.splitlines() if line.startswith("design.py")]
    assert heads == [
        # At the field's own line (4), not the Args(Raw) call (5).
        'design.py:4: toolset "records" › tool "lookup": Args model Raw, field "data": bytes '
        "have no JSON form; use str (base64)",
        'design.py:7: toolset "weather" › tool "get": Args JSON Schema is not a valid JSON '
        "Schema (2020-12): 'objekt' is not valid under any of the given schemas (at /type)",
        'design.py:10: service "svc" › agent "a": Deferred is not valid inside agent "a"; it '
        "belongs inside a consuming Use(...) body",
        "design.py: 3 design errors",
    ]
    assert not (tmp_path / "gen").exists()


@pytest.mark.parametrize("command", ["validate", "gen"])
def test_name_collisions_are_reported_with_dsl_errors_in_one_run(
    tmp_path: Path, command: str
) -> None:
    # Provider names, executor classes and the registries module are checked by the
    # generator; a design that also breaks DSL rules still gets them in the same run.
    (tmp_path / "design.py").write_text(
        "from agentgen.dsl import *\n"
        'AB = Toolset("a_b", lambda: Tool("c", "C."))\n'
        'A = Toolset("a", lambda: Tool("b_c", "B C."))\n'
        'A_1 = Toolset("a_1", lambda: Tool("one", "One."))\n'
        'A1 = Toolset("a1", lambda: Tool("two", "Two."))\n'
        'Company = Registry("company", lambda: URL("https://registry.example"))\n'
        'with Service("registries"):\n'
        '    with Agent("both", "Uses both."):\n'
        "        Use(AB)\n"
        "        Use(A)\n"
        "        Use(A_1)\n"
        "        Use(A1)\n"
        "        Use(Company)\n"
        '    Agent("bad", "Defers nothing.", lambda: Deferred())\n'
    )
    code, out, err = run(command, "design.py", cwd=tmp_path)
    assert (code, out) == (1, "")
    heads = [line for line in err.splitlines() if line.startswith("design.py")]
    assert heads == [
        'design.py:7: service "registries": service name "registries" is taken by the '
        "generated module registries.py that holds the settings of the design's registries; "
        "rename the service",
        'design.py:10: service "registries" › agent "both" › Use(a): tools "a_b.c" and '
        '"a.b_c" of agent "registries.both" are both sent to models as "a_b_c" (provider names '
        "replace '.' and every character outside [A-Za-z0-9_-] with '_'), so a call to one "
        "could not be told from a call to the other; rename one of the tools or toolsets",
        'design.py:12: service "registries" › agent "both" › Use(a1): toolsets "a_1" and "a1" '
        "both generate the executor class A1Executor, which the config of agent "
        '"registries.both" imports together; rename one of the toolsets',
        'design.py:14: service "registries" › agent "bad": Deferred is not valid inside agent '
        '"bad"; it belongs inside a consuming Use(...) body',
        "design.py: 4 design errors",
    ]
    assert not (tmp_path / "gen").exists()


def test_top_level_help_shows_every_command_summary_uncut() -> None:
    result = CliRunner().invoke(main, ["--help"], terminal_width=80)
    assert result.exit_code == 0
    commands = result.stdout.split("Commands:")[1]
    assert "..." not in commands
    text = " ".join(commands.split())
    for command in main.commands.values():
        summary = (command.help or "").split("\n\n")[0]
        summary = " ".join(summary.split())
        assert summary and summary in text, f"{command.name}: {summary!r} is cut"


@pytest.mark.parametrize("command", ["validate", "gen"])
def test_ctrl_c_exits_130_not_the_invalid_designs_1(tmp_path: Path, command: str) -> None:
    # click's "Aborted!" exited 1, which a script reads as "the design is invalid".
    design = tmp_path / "design.py"
    design.write_text("raise KeyboardInterrupt\n")
    code, out, err = run(command, str(design))
    assert code == 130
    assert err.strip() == "interrupted"
    assert "Aborted" not in err + out
