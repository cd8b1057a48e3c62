"""Generated ``__all__`` lists are in the order ruff's RUF022 wants: checked against ruff
itself, on names that sit at the edges of its groups."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from agentgen.codegen.generation_model import dunder_all_key

NAMES = [
    "E", "Doc", "AB", "A1", "_", "B_", "x", "Item10", "Item2", "ITEM", "É", "Éa", "_A", "a_B",
    "Z", "z", "HTTPError", "HTTP_ERROR", "A_1", "_1",
]  # fmt: skip


def test_the_all_order_is_the_one_ruff_writes(tmp_path: Path) -> None:
    # A one-letter class (`E`) was sorted with SCREAMING_CASE names, so `ruff check --select
    # RUF022` failed on a generated types.py.
    module = tmp_path / "names.py"
    module.write_text(f"__all__ = {sorted(set(NAMES))!r}\n", encoding="utf-8")
    ruff = Path(sys.executable).with_name("ruff")
    subprocess.run(
        [str(ruff), "check", "--isolated", "--select", "RUF022", "--fix", "-q", str(module)],
        check=False,
        capture_output=True,
    )
    written = ast.literal_eval(module.read_text(encoding="utf-8").partition("=")[2].strip())
    assert written == sorted(set(NAMES), key=dunder_all_key)
