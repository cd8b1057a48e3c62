"""``mypy --strict`` on an application that imports generated code works on the editable
install ``make`` sets up, with no mypy setting of the application's own.

setuptools' editable install reaches ``agentgen.*`` through an import hook that mypy cannot
follow; ``make`` therefore also puts a tree of links laid out as the installed package on the
environment's path (``.venv/agentgen-src``, named by ``agentgen-src.pth``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

APP = """
from agentgen.runtime import ModelPlanner, Runtime, ToolContext
from myapp.gen.assistant.agents import clerk
from myapp.gen.assistant.toolsets.records import types


class Records:
    async def lookup(self, args: types.LookupArgs, context: ToolContext) -> types.Record:
        return types.Record(id=args.id, title="t", body="b")

    async def search(self, args: types.SearchArgs, context: ToolContext) -> types.SearchResult:
        return types.SearchResult(ids=[])

    async def analyze(self, args: types.AnalyzeArgs, context: ToolContext) -> types.Analysis:
        return types.Analysis(summary=args.ids[0])


def wire(rt: Runtime) -> None:
    clerk.register_clerk_agent(
        rt, clerk.ClerkAgentConfig(planner=ModelPlanner("m"), records_executor=Records())
    )
"""


def test_mypy_strict_on_a_users_package_finds_agentgen(tmp_path: Path) -> None:
    package = tmp_path / "myapp"
    shutil.copytree(ROOT / "examples/records/gen", package / "gen")
    (package / "__init__.py").write_text("")
    (package / "main.py").write_text(textwrap.dedent(APP))
    # What a user runs: no MYPYPATH, no mypy configuration, the environment make installed.
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "myapp"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "import-not-found" not in done.stdout
