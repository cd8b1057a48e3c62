"""Snapshots of what ``agentgen gen`` prints for broken designs (line numbers included).

Each ``tests/designs_with_errors/<name>.py`` has its expected output in ``<name>.out``: the
exit code on the first line, then stderr. Update them with ``pytest --update-snapshots`` after
an intended change, and read the diff before committing it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentgen.codegen.cli import main

FOLDER = Path(__file__).resolve().parents[1] / "designs_with_errors"
DESIGNS = sorted(p.name for p in FOLDER.glob("*.py"))


def run_gen(design: str, out: Path) -> str:
    old = os.getcwd()
    os.chdir(FOLDER)
    try:
        result = CliRunner().invoke(main, ["gen", design, "-o", str(out)])
    finally:
        os.chdir(old)
    return f"exit {result.exit_code}\n{result.stderr}"


def test_there_are_broken_designs() -> None:
    assert len(DESIGNS) >= 6


@pytest.mark.parametrize("design", DESIGNS)
def test_error_output(design: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    output = run_gen(design, tmp_path / "gen")
    assert not (tmp_path / "gen").exists(), "nothing may be written for a broken design"
    assert "agentgen/" not in output and "site-packages" not in output
    snapshot = FOLDER / design.replace(".py", ".out")
    if request.config.getoption("--update-snapshots"):
        snapshot.write_text(output)
    assert snapshot.exists(), f"no snapshot for {design}; run pytest --update-snapshots"
    assert output == snapshot.read_text()
