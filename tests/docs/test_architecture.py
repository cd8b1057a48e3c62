"""docs/architecture.md stays true: every path it names exists, every package is on the map."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
PATH = re.compile(r"`((?:dsl|codegen|runtime|templates)/[\w/.*-]*)`")


def test_every_path_named_exists() -> None:
    named = PATH.findall(DOC.read_text(encoding="utf-8"))
    assert len(named) > 30
    missing = [
        path
        for path in named
        if not (list(ROOT.glob(path)) if "*" in path else (ROOT / path).exists())
    ]
    assert missing == [], f"docs/architecture.md names paths that do not exist: {missing}"


def test_every_package_is_on_the_map() -> None:
    text = DOC.read_text(encoding="utf-8")
    for init in sorted(ROOT.glob("*/**/__init__.py")):
        package = init.parent.relative_to(ROOT).as_posix()
        if package.split("/")[0] in ("dsl", "codegen", "runtime") and "/" in package:
            assert f"`{package}/`" in text, f"{package}/ is missing from docs/architecture.md"
