"""Writing a generation, checking a committed one, and removing what is no longer generated.

Only files that carry agentgen's generated header are ever removed or replaced: files an
application keeps next to its generated packages are never touched, and a generation that would
overwrite one (a file of the application at a generated path) is refused as a whole. The hash in
the header (:mod:`agentgen.codegen.stamp`) tells untouched output from a hand edit: an edited
file is overwritten only when the caller forces it, and a file is removed as no longer
generated only when it is untouched; others are kept and reported.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agentgen.codegen.stamp import file_state, state

if TYPE_CHECKING:
    from agentgen.codegen.render import RenderedFile


@dataclass
class Diff:
    """How an output folder differs from a generation (paths relative to the folder)."""

    missing: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    #: Generated paths taken by something agentgen did not generate (the application's file,
    #: a folder, or a file where a generated folder goes): never overwritten.
    conflicts: list[str] = field(default_factory=list)
    #: Generated paths whose file was edited by hand since agentgen wrote it (its content no
    #: longer matches its header's hash): overwritten only when forced.
    edited: list[str] = field(default_factory=list)
    #: Files no longer generated that carry agentgen's header but are not untouched output
    #: (edited, or written before headers had hashes): never removed.
    kept: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.missing or self.stale or self.extra or self.conflicts or self.edited)


class OutputConflictError(Exception):
    """Generated paths hold files agentgen did not generate, or (unless forced) files edited
    by hand; nothing was written."""

    def __init__(self, root: Path, conflicts: list[str], edited: Sequence[str] = ()) -> None:
        self.root = root
        self.conflicts = conflicts
        self.edited = list(edited)
        refused = [*conflicts, *self.edited]
        super().__init__(
            f"{root}: refusing to overwrite {len(refused)} path(s) agentgen did not generate "
            "or that were edited by hand: " + ", ".join(refused)
        )


def is_removable(path: Path) -> bool:
    """True when ``path`` is untouched output of agentgen, which a generation may remove."""
    return file_state(path) == "untouched"


def _existing(root: Path) -> Iterable[Path]:
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(files):
            if name.endswith((".py", ".json")):
                yield Path(directory) / name


def _blocked(root: Path, relative: str, folders: dict[str, bool]) -> bool:
    """True when a folder on the way to ``relative`` exists as something else than a folder
    (``folders`` remembers the answer for each folder already looked at)."""
    parts = relative.split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        folder = "/".join(parts[:depth])
        blocked = folders.get(folder)
        if blocked is None:
            path = root / folder
            blocked = folders[folder] = path.exists() and not path.is_dir()
        if blocked:
            return True
    return False


def compare(root: Path, files: Iterable[RenderedFile]) -> Diff:
    diff = Diff()
    produced: set[str] = set()
    folders: dict[str, bool] = {}
    for file in files:
        produced.add(file.path)
        target = root / file.path
        if _blocked(root, file.path, folders):
            diff.conflicts.append(file.path)
            continue
        try:
            current = target.read_text(encoding="utf-8")
        except FileNotFoundError:
            diff.missing.append(file.path)
            continue
        except (OSError, UnicodeDecodeError):  # a folder, an unreadable or binary file
            diff.conflicts.append(file.path)
            continue
        if current == file.text:
            continue
        found = state(current)
        if found in ("untouched", "legacy"):
            # A file written before headers had hashes cannot show an edit; it is replaced as
            # before, so upgrading agentgen needs no --force.
            diff.stale.append(file.path)
        elif found == "edited":
            diff.edited.append(file.path)
        else:
            diff.conflicts.append(file.path)
    if root.is_dir():
        for path in _existing(root):
            relative = path.relative_to(root).as_posix()
            if relative in produced:
                continue
            found_state = file_state(path)
            if found_state == "untouched":
                diff.extra.append(relative)
            elif found_state in ("edited", "legacy"):
                diff.kept.append(relative)
    return diff


def write(root: Path, files: Iterable[RenderedFile], *, force: bool = False) -> Diff:
    """Write what changed, remove generated files no longer produced; return what was done.

    Raises :class:`OutputConflictError`, writing nothing, when a generated path holds
    something agentgen did not generate, or a file edited by hand (unless ``force``: then the
    edited files are overwritten like stale ones).
    """
    files = list(files)
    diff = compare(root, files)
    if diff.conflicts or (diff.edited and not force):
        raise OutputConflictError(root, diff.conflicts, diff.edited)
    if diff.edited:
        diff.stale.extend(diff.edited)
        diff.edited.clear()
    by_path = {f.path: f for f in files}
    for directory in sorted({(root / r).parent for r in [*diff.missing, *diff.stale]}):
        directory.mkdir(parents=True, exist_ok=True)

    def put(relative: str) -> None:
        target = root / relative
        if relative in stale:
            # Replaced in one step: a process importing the package never reads half a file.
            tmp = target.with_name(f".{target.name}.agentgen-tmp")
            tmp.write_text(by_path[relative].text, encoding="utf-8")
            os.replace(tmp, target)
        else:
            target.write_text(by_path[relative].text, encoding="utf-8")

    stale = set(diff.stale)
    # File creation dominates writing a large tree; threads overlap the file system's latency.
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(put, [*diff.missing, *diff.stale]))
    for relative in diff.extra:
        target = root / relative
        target.unlink()
        _prune(target.parent, root)
    return diff


def _prune(directory: Path, root: Path) -> None:
    """Remove folders emptied by removals (a __pycache__ alone counts as empty)."""
    while directory != root and directory.is_dir():
        entries = [e for e in directory.iterdir() if e.name != "__pycache__"]
        if entries:
            return
        for cache in directory.iterdir():
            for item in cache.iterdir():
                item.unlink()
            cache.rmdir()
        directory.rmdir()
        directory = directory.parent
