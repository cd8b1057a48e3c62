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

from click.testing import CliRunner

from agentgen.codegen.cli import main

ROOT = Path(__file__).resolve().parents[2]
PYTHON = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
#: Documents whose Python (designs aside) imports only agentgen and the examples, so it can be
#: checked from the repository's root. Each document runs in one namespace (tests/docs), so
#: its snippets are checked as one module and a name given again is not an error.
DOCUMENTS = ["concepts.md", "engines.md", "observability.md", "providers.md", "testing.md"]


def test_the_application_code_of_the_docs_passes_mypy_strict(tmp_path: Path) -> None:
    design, test, *_ = PYTHON.findall((ROOT / "docs/walkthrough.md").read_text())
    (tmp_path / "design.py").write_text(design)
    generated = CliRunner().invoke(main, ["gen", str(tmp_path / "design.py")])
    assert generated.exit_code == 0, generated.output
    modules = [tmp_path / "walkthrough_test.py"]
    modules[0].write_text(test)
    for document in DOCUMENTS:
        snippets = [
            code
            for code in PYTHON.findall((ROOT / "docs" / document).read_text())
            if "from agentgen.dsl import" not in code
        ]
        assert snippets, f"{document} has no application code"
        modules.append(tmp_path / f"doc_{Path(document).stem}.py")
        modules[-1].write_text("\n".join(snippets))
    # One mypy run (it takes seconds to start): from the root, which holds `examples`, with the
    # walkthrough's generated `gen` package found through MYPYPATH.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["MYPYPATH"] = str(tmp_path)
    cache = str(tmp_path / ".mypy_cache")  # not the checkout's: the run starts from its root
    strict = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", cache]
    done = subprocess.run(
        [*strict, "--disable-error-code", "no-redef", *map(str, modules)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"found in {len(modules)} source files" in done.stdout
