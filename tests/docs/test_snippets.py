"""Every Python snippet and every ``console`` transcript of the README and docs/ runs.

Each document runs in order, in one namespace, inside a fresh folder that is the current
folder and is on ``sys.path`` (so code the document generates there can be imported):

* Snippets that import ``agentgen.dsl`` are designs: they are loaded (and validated) like a
  design file. A design whose first line names a file (``# design.py``) is written there, so
  later steps can validate, generate and regenerate it.
* Other ``python`` snippets run as plain Python. Packages generated in the folder are imported
  afresh by each snippet (a snippet after a regeneration sees the new code).
* ``console`` fences are command transcripts: each ``$ agentgen ...`` line runs the command
  there, and the lines up to the next ``$`` must be exactly what it prints.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentgen.codegen.cli import main
from agentgen.codegen.pipeline import check_file

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(python|console)\n(.*?)^```", re.DOTALL | re.MULTILINE)
FILE_NAME = re.compile(r"^# ([\w/.-]+\.py)\n")


def snippets(document: Path) -> list[str]:
    return [code for kind, code in FENCE.findall(document.read_text()) if kind == "python"]


def blocks(document: Path) -> list[tuple[str, str]]:
    return FENCE.findall(document.read_text())


def test_the_docs_have_snippets() -> None:
    assert sum(len(snippets(d)) for d in DOCUMENTS) >= 4


def forget_generated(folder: Path) -> None:
    """Drop modules loaded from ``folder`` so the next import reads what is there now."""
    for name, module in list(sys.modules.items()):
        origin = getattr(module, "__file__", None) or ""
        if origin.startswith(str(folder)):
            del sys.modules[name]


def run_console(transcript: str, where: str) -> None:
    lines = transcript.splitlines()
    commands = [i for i, line in enumerate(lines) if line.startswith("$ ")]
    assert commands and commands[0] == 0, f"{where}: a console block starts with a $ command"
    for start, end in zip(commands, [*commands[1:], len(lines)], strict=True):
        argv = shlex.split(lines[start][2:])
        assert argv[0] == "agentgen", f"{where}: only agentgen commands run here: {argv}"
        result = CliRunner().invoke(main, argv[1:], terminal_width=100)
        expected = "\n".join(lines[start + 1 : end])
        assert result.output.rstrip("\n") == expected, (
            f"{where}: `{lines[start][2:]}` printed (exit {result.exit_code}):\n{result.output}"
        )


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_snippets_run(document: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    namespace: dict[str, object] = {"__name__": f"doc_{document.stem}"}
    try:
        for number, (kind, code) in enumerate(blocks(document), start=1):
            where = f"{document.name} block {number}"
            if kind == "console":
                run_console(code, where)
            elif "from agentgen.dsl import" in code:
                named = FILE_NAME.match(code)
                design = tmp_path / (named.group(1) if named else f"{document.stem}_{number}.py")
                design.parent.mkdir(parents=True, exist_ok=True)
                design.write_text(code)
                checked = check_file(design)
                assert not checked.errors, f"{where}: {checked.errors}"
                root = checked.root
                assert root.services or root.toolsets, f"{where} is empty"
            else:
                forget_generated(tmp_path)
                exec(compile(code, f"{document.name}#{number}", "exec"), namespace)
    finally:
        forget_generated(tmp_path)


def test_the_readme_validate_example_is_what_validate_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README shows `agentgen validate` on its first design with "search" misspelt."""
    readme = (ROOT / "README.md").read_text()
    design = snippets(ROOT / "README.md")[0]
    selection = 'Deferred("search", "analyze")'
    assert selection in design
    (tmp_path / "design.py").write_text(design.replace(selection, 'Deferred("serach", "analyze")'))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    result = CliRunner().invoke(main, ["validate", "design.py"])
    assert result.exit_code == 1
    shown = re.search(
        r"`agentgen validate design.py` evaluates.*?```text\n(.*?)```", readme, re.DOTALL
    )
    assert shown is not None
    assert result.stderr.startswith(shown.group(1)), result.stderr
