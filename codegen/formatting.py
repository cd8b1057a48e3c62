"""Formatting generated Python exactly as black does.

Generated files must be black's output byte for byte (with black's default mode, whatever the
user's own configuration says). ``ruff format`` produces the same bytes for the code the
templates write, hundreds of times faster than black in-process, so it formats every file of a
generation in one process; a test runs ``black --check`` over generated trees to keep the two
in step.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ruff.__main__ import find_ruff_bin  # type: ignore[import-untyped]

#: Black's defaults, passed explicitly so no pyproject.toml or ruff.toml can change them.
RUFF_ARGS = (
    "format",
    "--isolated",
    "--no-cache",
    "--line-length=88",
    "--target-version=py311",
    "--config=format.quote-style='double'",
    "--config=format.indent-style='space'",
    "--config=format.skip-magic-trailing-comma=false",
    "--config=format.line-ending='lf'",
)


class FormattingError(RuntimeError):
    """The formatter rejected generated code (a generator bug); the message names the file."""


def _scratch_dir() -> str | None:
    """A memory-backed folder when the system has one: the formatter's round trip through
    files costs several times more on a disk."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None


def format_python(sources: Sequence[tuple[str, str]]) -> list[str]:
    """Format ``(relative path, source)`` pairs; returns the formatted sources in order."""
    if not sources:
        return []
    with tempfile.TemporaryDirectory(prefix="agentgen-format-", dir=_scratch_dir()) as tmp:
        root = Path(tmp)
        for index, (_, text) in enumerate(sources):
            (root / f"f{index}.py").write_text(text, encoding="utf-8")
        done = subprocess.run(
            [find_ruff_bin(), *RUFF_ARGS, str(root)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            message = done.stderr.strip()
            for index, (path, _) in enumerate(sources):
                message = message.replace(str(root / f"f{index}.py"), path)
            raise FormattingError(f"formatting generated code failed:\n{message}")
        return [(root / f"f{i}.py").read_text(encoding="utf-8") for i in range(len(sources))]
