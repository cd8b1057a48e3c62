"""The code the docs show an application writing passes ``mypy --strict``, as
[testing](docs/testing.md) says an application's code over generated packages does: a
newcomer copies it, then type-checks it. The walkthrough's script parameter was a bare
``list``, a confirmer returned ``Any`` and scripts were inferred as ``list[object]``, all of
which ``--strict`` refuses."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentgen.codegen.cli import main

ROOT = Path(__file__).resolve().parents[2]
PYTHON = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
#: Documents whose Python (designs aside) imports only agentgen and the examples, so it can be
#: checked from the repository's root. Each document runs in one namespace (tests/docs), so
#: its snippets are checked as one module and a name given again is not an error.
DOCUMENTS = ["concepts.md", "engines.md", "observability.md", "providers.md", "testing.md"]


def strict(module: Path, cwd: Path, *options: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", *options, str(module)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_walkthrough_test_passes_mypy_strict(tmp_path: Path) -> None:
    design, test, *_ = PYTHON.findall((ROOT / "docs/walkthrough.md").read_text())
    (tmp_path / "design.py").write_text(design)
    generated = CliRunner().invoke(main, ["gen", str(tmp_path / "design.py")])
    assert generated.exit_code == 0, generated.output
    (tmp_path / "test_support.py").write_text(test)
    done = strict(tmp_path / "test_support.py", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("document", DOCUMENTS)
def test_the_application_code_of_a_page_passes_mypy_strict(document: str, tmp_path: Path) -> None:
    snippets = [
        code
        for code in PYTHON.findall((ROOT / "docs" / document).read_text())
        if "from agentgen.dsl import" not in code
    ]
    assert snippets, f"{document} has no application code"
    module = tmp_path / f"doc_{Path(document).stem}.py"
    module.write_text("\n".join(snippets))
    done = strict(module, ROOT, "--disable-error-code", "no-redef")
    assert done.returncode == 0, done.stdout + done.stderr
