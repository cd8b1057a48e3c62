"""Writing a generation, checking a committed one, and removing what is no longer generated.

Only files that carry agentgen's generated header are ever removed or replaced: files an
application keeps next to its generated packages are never touched, and a generation that would
overwrite one (a file of the application at a generated path) is refused as a whole. The hash in
the header (:mod:`agentgen.codegen.stamp`) tells untouched output from a hand edit: an edited
file is overwritten only when the caller forces it, and a file is removed as no longer
generated only when it is untouched; others are kept and reported.

Writing is atomic per file, so that a generation killed at any point (``kill -9``, a full
disk, a power cut) leaves nothing a rerun cannot repair by itself:

* every file is written to a temporary file in its own folder (named ``.<name>.<pid>.<random>``
  ``.agentgen-tmp``) and renamed over its path: a generated path holds either its previous
  content or its new content, never part of it;
* before the first write, a journal (``.journal.agentgen-tmp`` in the output folder, flushed
  to disk) lists the paths about to be written; it is removed once the generation is complete.
  While it exists, a listed path holding an empty or truncated file is agentgen's own partial
  output (a power cut can persist a rename before the data it names; generated files are not
  flushed one by one, since a rerun repairs them) and is replaced like a stale file; elsewhere
  an empty file is the application's and is never overwritten;
* temporary files and journals left behind by a killed run are agentgen's own: the next
  ``gen`` removes them, and ``gen --check`` lists them as extra until then.

A folder below the output folder that holds another generation (its root package's docstring
starts with :data:`ROOT_DOC`) is left alone: ``-o .`` in a project never removes the packages
another design generated below it.

``gen`` never writes through a symbolic link: a link at a generated path, or at a folder on
the way to one, is refused as a whole with the paths at fault, before anything is written.

An output folder that cannot be one (a file stands where it or a folder above it goes) or that
the file system refuses to write is :class:`OutputFolderError`, naming the path at fault: a
problem of the command line or the machine, not of the design nor of agentgen.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agentgen.codegen.stamp import ROOT_DOC, file_state, state

if TYPE_CHECKING:
    from agentgen.codegen.render import RenderedFile

#: The suffix of agentgen's temporary files (see the module).
TEMP_SUFFIX = ".agentgen-tmp"
#: The journal of a generation in progress, in the output folder.
JOURNAL = ".journal" + TEMP_SUFFIX


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
    #: Generated paths that are (or go through) a symbolic link: never written through.
    links: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (
            self.missing or self.stale or self.extra or self.conflicts or self.edited or self.links
        )


class OutputConflictError(Exception):
    """Generated paths hold files agentgen did not generate, symbolic links, or (unless
    forced) files edited by hand; nothing was written."""

    def __init__(
        self,
        root: Path,
        conflicts: list[str],
        edited: Sequence[str] = (),
        links: Sequence[str] = (),
    ) -> None:
        self.root = root
        self.conflicts = conflicts
        self.edited = list(edited)
        self.links = list(links)
        parts = []
        if self.links:
            parts.append(
                f"refusing to write through {len(self.links)} symbolic link(s) at generated "
                f"paths (one could lead outside the output folder): {', '.join(self.links)}"
            )
        refused = [*conflicts, *self.edited]
        if refused:
            parts.append(
                f"refusing to overwrite {len(refused)} path(s) agentgen did not generate or "
                "that were edited by hand: " + ", ".join(refused)
            )
        super().__init__(f"{root}: " + "; ".join(parts))


class OutputFolderError(Exception):
    """The output folder cannot be used: a file stands where it (or a folder above it) goes, or
    the file system refused a write (permissions, a read-only or full disk)."""


def _file_above(root: Path) -> Path | None:
    """The file that stands where ``root`` or a folder above it goes, if any."""
    for path in (root, *root.parents):
        if path.exists():
            return None if path.is_dir() else path
    return None


def _usable(root: Path) -> None:
    blocker = _file_above(root)
    if blocker == root:
        raise OutputFolderError(
            f"output folder {root} is a file, not a folder; choose another output folder with -o"
        )
    if blocker is not None:
        raise OutputFolderError(
            f"output folder {root} cannot be created: {blocker} is a file, not a folder; "
            "choose another output folder with -o"
        )


def is_removable(path: Path) -> bool:
    """True when ``path`` is untouched output of agentgen, which a generation may remove."""
    return file_state(path) == "untouched"


def is_leftover(name: str) -> bool:
    """Whether a file name is one of agentgen's temporary files or journals (left by a killed
    run)."""
    return name.startswith(".") and name.endswith(TEMP_SUFFIX)


def _journal(root: Path) -> frozenset[str]:
    """The paths an interrupted generation was writing (none when it completed)."""
    try:
        paths = json.loads((root / JOURNAL).read_text(encoding="utf-8"))["paths"]
    except (OSError, ValueError, KeyError, TypeError):
        return frozenset()
    if not isinstance(paths, list):
        return frozenset()
    return frozenset(p for p in paths if isinstance(p, str))


def _write_journal(root: Path, paths: list[str]) -> None:
    """Record the paths about to be written, durably (the data, then the rename)."""
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".journal.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
    with tmp.open("w", encoding="utf-8") as handle:
        json.dump({"paths": paths}, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, root / JOURNAL)
    directory = os.open(root, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def _is_other_generation(folder: Path) -> bool:
    """Whether ``folder`` holds another generation (``-o .`` above a project's ``gen/``): its
    files are not this generation's to remove, nor extra for ``--check``."""
    try:
        text = (folder / "__init__.py").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    lines = text.split("\n", 3)
    return state(text) != "foreign" and len(lines) > 2 and lines[2].startswith(f'"""{ROOT_DOC}')


def _root_doc(text: str) -> str | None:
    """The docstring line of a generation's root ``__init__.py`` (it names the design), or
    None when the text is no such file."""
    lines = text.split("\n", 3)
    if state(text) == "foreign" or len(lines) < 3 or not lines[2].startswith(f'"""{ROOT_DOC}'):
        return None
    return lines[2]


def check_same_design(root: Path, files: Sequence[RenderedFile], design: str) -> None:
    """Refuse to generate ``design`` into a folder that holds another design's generation.

    Two design files next to each other both default to ``gen/``: generating the second
    removed every package of the first without a word, and each ``gen --check`` then failed
    for the other. The root ``__init__.py`` names the design it was generated from.
    """
    new = next((_root_doc(f.text) for f in files if f.path == "__init__.py"), None)
    try:
        current = _root_doc((root / "__init__.py").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return
    if new is None or current is None or current == new:
        return
    other = current.removeprefix(f'"""{ROOT_DOC} ').removesuffix('."""')
    raise OutputFolderError(
        f"output folder {root} holds the packages generated from {other}, not from {design}: "
        f"generating {design} there would remove them; give each design its own output "
        f"folder with -o (for example -o {root.parent / Path(design).stem}_gen), or pass "
        f"--force if {design} is {other} renamed"
    )


def _existing(root: Path) -> Iterable[Path]:
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(
            d
            for d in dirs
            if d != "__pycache__"
            and not d.startswith(".")
            and not _is_other_generation(Path(directory) / d)
        )
        for name in sorted(files):
            path = Path(directory) / name
            if is_leftover(name) or (name.endswith((".py", ".json")) and not path.is_symlink()):
                yield path


def _obstacle(root: Path, relative: str, folders: dict[str, str | None]) -> str | None:
    """What stands on the way to ``relative`` inside ``root``: ``"link"`` for a symbolic link
    (a folder or the file itself), ``"file"`` for a folder on the way that exists as something
    else than a folder, None otherwise (``folders`` remembers the folders already looked at)."""
    parts = relative.split("/")
    for depth in range(1, len(parts)):
        folder = "/".join(parts[:depth])
        if folder not in folders:
            path = root / folder
            folders[folder] = (
                "link"
                if path.is_symlink()
                else ("file" if path.exists() and not path.is_dir() else None)
            )
        if folders[folder] is not None:
            return folders[folder]
    return "link" if (root / relative).is_symlink() else None


def compare(root: Path, files: Iterable[RenderedFile]) -> Diff:
    _usable(root)
    diff = Diff()
    produced: set[str] = set()
    folders: dict[str, str | None] = {}
    interrupted = _journal(root)
    for file in files:
        produced.add(file.path)
        target = root / file.path
        obstacle = _obstacle(root, file.path, folders)
        if obstacle is not None:
            (diff.links if obstacle == "link" else diff.conflicts).append(file.path)
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
        partial = file.path in interrupted and (not current or file.text.startswith(current))
        if found in ("untouched", "legacy") or partial:
            # A file written before headers had hashes cannot show an edit; it is replaced as
            # before, so upgrading agentgen needs no --force. An interrupted generation's own
            # partial output is replaced too.
            diff.stale.append(file.path)
        elif found == "edited":
            diff.edited.append(file.path)
        else:
            diff.conflicts.append(file.path)
    if root.is_dir():
        for path in _existing(root):
            relative = path.relative_to(root).as_posix()
            if is_leftover(path.name):
                diff.extra.append(relative)
                continue
            if relative in produced:
                continue
            found_state = file_state(path)
            if found_state == "untouched":
                diff.extra.append(relative)
            elif found_state in ("edited", "legacy"):
                diff.kept.append(relative)
    return diff


def _replace(target: Path, text: str) -> None:
    """Write ``text`` to ``target`` atomically: a temporary file in the same folder, renamed
    over the target (which replaces a file, or a link, never writing through it)."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}")
    try:
        with tmp.open("w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write(root: Path, files: Iterable[RenderedFile], *, force: bool = False) -> Diff:
    """Write what changed, remove generated files no longer produced (and temporary files a
    killed run left); return what was done.

    Raises :class:`OutputConflictError`, writing nothing, when a generated path holds
    something agentgen did not generate, is reached through a symbolic link, or holds a file
    edited by hand (unless ``force``: then the edited files are overwritten like stale ones);
    :class:`OutputFolderError` when the output folder cannot be one or cannot be written.
    """
    files = list(files)
    diff = compare(root, files)
    if diff.conflicts or diff.links or (diff.edited and not force):
        raise OutputConflictError(root, diff.conflicts, diff.edited, diff.links)
    try:
        return _apply(root, files, diff)
    except OSError as exc:
        path = Path(os.fsdecode(exc.filename)) if exc.filename is not None else root
        if is_leftover(path.name):
            path = path.parent  # a temporary file's name means nothing to the user: its folder
        stopped = (
            "; files were written part-way: run `agentgen gen` again once it can write, to "
            "complete the generation"
            if (root / JOURNAL).exists()
            else ""
        )
        raise OutputFolderError(
            f"cannot write {path}: {exc.strerror or exc}; make the output folder {root} "
            f"writable or choose another one with -o{stopped}"
        ) from None


def _apply(root: Path, files: list[RenderedFile], diff: Diff) -> Diff:
    """Write what ``diff`` says is missing or stale (edited files included: the caller allowed
    it) and remove what is extra."""
    if diff.edited:
        diff.stale.extend(diff.edited)
        diff.edited.clear()
    by_path = {f.path: f for f in files}
    changed = [*diff.missing, *diff.stale]
    if changed:
        _write_journal(root, sorted(changed))
    for directory in sorted({(root / r).parent for r in changed}):
        directory.mkdir(parents=True, exist_ok=True)

    def put(relative: str) -> None:
        _replace(root / relative, by_path[relative].text)

    # File creation dominates writing a large tree; threads overlap the file system's latency.
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(put, changed))
    for relative in diff.extra:
        if relative == JOURNAL:
            continue  # removed last: the generation is complete only then
        target = root / relative
        target.unlink(missing_ok=True)
        _prune(target.parent, root)
    (root / JOURNAL).unlink(missing_ok=True)
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
