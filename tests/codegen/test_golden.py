"""The committed generated packages of every example are exactly what the generator produces.

Regenerate them with ``make regen`` after changing the generator or an example design.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from tests.codegen.helpers import EXAMPLES, generate_design, tree

DESIGNS = sorted(p.parent.name for p in EXAMPLES.glob("*/design.py") if (p.parent / "gen").is_dir())


def test_every_example_has_committed_packages() -> None:
    assert {"records", "company", "quickstart"} <= set(DESIGNS)


@pytest.mark.parametrize("example", DESIGNS)
def test_golden_tree(example: str, tmp_path: Path) -> None:
    generate_design(EXAMPLES / example / "design.py", tmp_path)
    expected = tree(EXAMPLES / example / "gen")
    actual = tree(tmp_path)
    assert sorted(actual) == sorted(expected), "file lists differ; run `make regen`"
    for path, text in expected.items():
        if actual[path] != text:
            diff = "".join(
                difflib.unified_diff(
                    text.splitlines(True), actual[path].splitlines(True), path, "regenerated"
                )
            )
            pytest.fail(f"{path} differs from a fresh generation (run `make regen`):\n{diff}")


def test_generation_is_byte_identical_across_runs(tmp_path: Path) -> None:
    design = EXAMPLES / "records" / "design.py"
    first, _ = generate_design(design, tmp_path / "a")
    second, _ = generate_design(design, tmp_path / "b")
    assert first.files == second.files
    assert tree(tmp_path / "a") == tree(tmp_path / "b")
