"""Every Python snippet of the README and docs/ runs.

Snippets that import ``agentgen.dsl`` are designs: they are loaded (and validated) like a
design file. The others run as plain Python, in order, in one namespace per document.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentgen.codegen.pipeline import check_file

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def snippets(document: Path) -> list[str]:
    return FENCE.findall(document.read_text())


def test_the_docs_have_snippets() -> None:
    assert sum(len(snippets(d)) for d in DOCUMENTS) >= 4


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_snippets_run(document: Path, tmp_path: Path) -> None:
    namespace: dict[str, object] = {"__name__": f"doc_{document.stem}"}
    for number, code in enumerate(snippets(document), start=1):
        if "from agentgen.dsl import" in code:
            design = tmp_path / f"{document.stem}_{number}.py"
            design.write_text(code)
            checked = check_file(design)
            assert not checked.errors, f"{document.name} snippet {number}: {checked.errors}"
            root = checked.root
            assert root.services or root.toolsets, f"{document.name} snippet {number} is empty"
        else:
            exec(compile(code, f"{document.name}#{number}", "exec"), namespace)
