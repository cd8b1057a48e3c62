"""The walkthrough's test passes ``mypy --strict``, as [testing](docs/testing.md) says an
application's code over generated packages does: a newcomer copies it, then type-checks it.
Its script parameter was a bare ``list``, which ``--strict`` refuses."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from agentgen.codegen.cli import main

ROOT = Path(__file__).resolve().parents[2]
PYTHON = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def test_the_walkthrough_test_passes_mypy_strict(tmp_path: Path) -> None:
    design, test, *_ = PYTHON.findall((ROOT / "docs/walkthrough.md").read_text())
    (tmp_path / "design.py").write_text(design)
    generated = CliRunner().invoke(main, ["gen", str(tmp_path / "design.py")])
    assert generated.exit_code == 0, generated.output
    (tmp_path / "test_support.py").write_text(test)
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "test_support.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
