"""Loading a design file: run it in a fresh evaluation context and validate the whole tree.

Three ways a load fails, each shown differently by the CLI:

* :class:`DesignFileError`: the file is missing, not a ``.py`` file, or not valid Python
  (one line, exit code 2);
* the design ran but breaks rules: not an exception; the returned
  :class:`~agentgen.dsl.pipeline.Evaluation` holds the DSL's errors, and the checker adds the
  generator's (``file:line`` per error, all of them, exit code 1);
* :class:`UserCodeError`: the design's own code raised; the traceback shows the user's frames
  only (exit code 1).
"""

from __future__ import annotations

import builtins
import difflib
import fnmatch
import glob
import importlib.machinery
import itertools
import os
import pathlib
import sys
import traceback
import types
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType

import agentgen.codegen
import agentgen.dsl
from agentgen.codegen.cache import is_installation_path, is_library_path
from agentgen.dsl.errors import sort_errors
from agentgen.dsl.eval import design_context
from agentgen.dsl.misuse import misused_call
from agentgen.dsl.pipeline import Evaluation, finish

_COUNTER = itertools.count(1)
_PACKAGE_DIRS = tuple(
    os.path.dirname(os.path.abspath(module.__file__ or "")) + os.sep
    for module in (agentgen.dsl, agentgen.codegen)
)


class DesignFileError(Exception):
    """The design file cannot be read as Python (missing, wrong kind, syntax error)."""


class UserCodeError(Exception):
    """The design's own code raised; ``traceback_text`` holds the user's frames only."""

    def __init__(self, traceback_text: str) -> None:
        super().__init__(traceback_text)
        self.traceback_text = traceback_text


def _compile(path: Path) -> types.CodeType:
    if not path.exists():
        raise DesignFileError(f"design file {path} does not exist")
    if path.is_dir():
        raise DesignFileError(f"{path} is a directory; pass the design's .py file")
    if path.suffix != ".py":
        raise DesignFileError(f"{path} is not a Python file: a design is a .py module")
    # Python's own loader compiles through the bytecode cache (__pycache__), like an import.
    loader = importlib.machinery.SourceFileLoader("_agentgen_design", str(path))
    try:
        code = loader.get_code("_agentgen_design")
    except OSError as exc:
        raise DesignFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    except SyntaxError as exc:
        where = f"{path}:{exc.lineno}" if exc.lineno else str(path)
        raise DesignFileError(f"{where}: not valid Python: {exc.msg}") from None
    except (ValueError, UnicodeDecodeError, ImportError) as exc:
        raise DesignFileError(f"{path}: not valid Python: {exc}") from None
    except RecursionError:
        # Python's compiler recurses over the syntax tree: an expression nested deeper than its
        # stack (a generated `a + b + ...` of some 100,000 terms) ended as a bug in agentgen.
        raise DesignFileError(
            f"{path}: not valid Python: an expression is nested too deeply for Python to "
            "compile; split it into smaller statements"
        ) from None
    if code is None:
        raise DesignFileError(f"{path}: not valid Python: no code")
    return code


def _is_agentgen_frame(filename: str) -> bool:
    return filename.startswith(_PACKAGE_DIRS) or filename.startswith("<frozen ")


def user_traceback(exc: BaseException) -> str:
    """The traceback of ``exc`` with agentgen's and the import machinery's frames removed.

    When the innermost frame is agentgen's own, the exception is a bug of agentgen rather than
    of the design: the full traceback is kept and labelled as such. An innermost frame of
    Python's own frozen modules is the design's: ``class Note(BaseModel)`` whose docstring
    holds a lone surrogate fails inside ``<frozen abc>``, at the design's line.
    """
    frames = traceback.extract_tb(exc.__traceback__)
    innermost = frames[-1].filename if frames else ""
    if innermost.startswith(_PACKAGE_DIRS) and not isinstance(exc, SystemExit):
        head = "agentgen internal error while evaluating the design (please report it):\n"
        return head + "".join(traceback.format_exception(exc))
    kept = traceback.StackSummary.from_list(
        [frame for frame in frames if not _is_agentgen_frame(frame.filename)]
    )
    lines = ["Traceback (most recent call last):\n", *kept.format()]
    lines.extend(traceback.format_exception_only(type(exc), exc))
    lines.append(_name_suggestion(exc))
    return "".join(lines)


def _name_suggestion(exc: BaseException) -> str:
    """``Did you mean: 'Records'?`` for a misspelt name (``Use(Recrods)``), as Python's own
    traceback says it from 3.12 on (3.11's ``traceback`` module does not): the closest of the
    names the failing frame could see."""
    name = getattr(exc, "name", None)
    tb = exc.__traceback__
    if type(exc) is not NameError or not isinstance(name, str) or tb is None:
        return ""
    while tb.tb_next is not None:
        tb = tb.tb_next
    frame = tb.tb_frame
    visible = [*frame.f_locals, *frame.f_globals, *vars(builtins)]
    close = difflib.get_close_matches(name, [v for v in visible if v != name], n=1)
    if not close or "Did you mean" in str(exc):
        return ""
    return f"Did you mean: {close[0]!r}?\n"


@dataclass
class _Recording:
    """What one load depended on: files it opened or imported, folders it listed."""

    files: set[str] = field(default_factory=set)
    listed: set[str] = field(default_factory=set)


_RECORDING: list[_Recording] = []
_LISTING_EVENTS = frozenset({"os.listdir", "os.scandir"})


def _module_places(*modules: types.ModuleType) -> tuple[str, ...]:
    """The source files of plain modules, the folders (with a trailing separator) of
    packages: what a code object's filename is compared with."""
    places: list[str] = []
    for module in modules:
        file = os.path.abspath(module.__file__ or "")
        is_package = os.path.basename(file).startswith("__init__.")
        places.append(os.path.dirname(file) + os.sep if is_package else file)
    return tuple(places)


#: The standard library's listing helpers: a folder they list is listed by their caller.
_LISTING_HELPERS = _module_places(os, glob, pathlib, fnmatch)


def _is_listing_helper(filename: str) -> bool:
    return any(
        filename.startswith(place) if place.endswith(os.sep) else filename == place
        for place in _LISTING_HELPERS
    )


def _is_import_system(filename: str) -> bool:
    return (
        filename.startswith(("<frozen importlib", "<frozen zipimport"))
        or f"{os.sep}importlib{os.sep}" in filename
    )


def _from_import_system() -> bool:
    """True when the import machinery (finders scanning ``sys.path``, package metadata) is
    listing a folder, rather than the design or a module it imports.

    Only the caller of the listing counts, seen through the standard library's listing
    helpers (``glob`` → ``os.scandir``): while an imported module's body runs, importlib's
    frames are always further up the stack, and what that module lists is the design's.
    """
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and _is_listing_helper(frame.f_code.co_filename):
        frame = frame.f_back
    return frame is not None and _is_import_system(frame.f_code.co_filename)


def _glob_folder(pattern: str, root_dir: object) -> str | None:
    """The folder a glob pattern lists first: its leading parts without wildcards."""
    parts: list[str] = []
    for part in pattern.replace(os.sep, "/").split("/"):
        if glob.has_magic(part):
            break
        parts.append(part)
    else:
        return None  # no wildcard: nothing is listed
    folder = "/".join(parts) or os.curdir
    if isinstance(root_dir, str | bytes | os.PathLike):
        folder = os.path.join(os.fsdecode(root_dir), folder)
    return folder


def _record(event: str, args: tuple[object, ...]) -> None:
    if not _RECORDING:
        return
    if event == "open":
        if args and isinstance(args[0], str | bytes):
            name = os.fsdecode(args[0])
            if not name.endswith(".pyc"):
                _RECORDING[-1].files.add(os.path.abspath(name))
        return
    folder: str | None = None
    if event in _LISTING_EVENTS:
        path = args[0] if args else None
        if path is None:
            folder = os.curdir
        elif isinstance(path, str | bytes | os.PathLike):
            folder = os.fsdecode(path)
    elif event in ("glob.glob", "glob.glob/2") and args and isinstance(args[0], str | bytes):
        root_dir = args[2] if event == "glob.glob/2" and len(args) > 2 else None
        folder = _glob_folder(os.fsdecode(args[0]), root_dir)
    if folder is None or _from_import_system():
        return
    folder = os.path.abspath(folder)
    if not is_installation_path(folder):
        _RECORDING[-1].listed.add(folder)


sys.addaudithook(_record)


def load_design(
    path: str | os.PathLike[str],
    *,
    inputs: set[str] | None = None,
    listed: set[str] | None = None,
) -> Evaluation:
    """Evaluate the design at ``path`` and run the DSL's rules; see the module docstring.

    With ``inputs``, collect the files the evaluation depended on: the design, every module
    it imported and every file it opened (standard library excluded). With ``listed``, collect
    the folders it listed (``glob``, ``os.listdir``, ``os.scandir``, ``Path.iterdir``...).
    """
    design = Path(path)
    code = _compile(design)
    recording = _Recording()
    _RECORDING.append(recording)
    try:
        return _run(design, code)
    finally:
        _RECORDING.pop()
        if inputs is not None:
            inputs.add(str(design.resolve()))
            inputs.update(
                p for p in recording.files if os.path.isfile(p) and not is_library_path(p)
            )
        if listed is not None:
            listed.update(recording.listed)


def package_of(folder: Path) -> tuple[str, Path] | None:
    """The dotted name of the package ``folder`` is (folders with an ``__init__.py``, up to
    the first that has none) and the folder its top package is in; None when ``folder`` is no
    package."""
    parts: list[str] = []
    while (folder / "__init__.py").is_file() and folder.name.isidentifier():
        parts.append(folder.name)
        folder = folder.parent
    if not parts:
        return None
    return ".".join(reversed(parts)), folder


def _run(design: Path, code: types.CodeType) -> Evaluation:
    directory = str(design.resolve().parent)
    module_name = f"_agentgen_design_{next(_COUNTER)}"
    module = types.ModuleType(module_name)
    module.__file__ = str(design)
    # A design inside a package imports its siblings as ``from .tools import X`` or
    # ``from pkg.tools import X`` whichever way agentgen was started (``python -m`` puts the
    # current folder on sys.path, the console script does not): it runs as a module of its
    # package, with the folder holding the top package on sys.path after its own folder.
    paths = [directory]
    package = package_of(Path(directory))
    if package is not None:
        module.__package__ = package[0]
        paths.append(str(package[1]))
    before = set(sys.modules)
    sys.modules[module_name] = module
    sys.path[0:0] = paths
    callers: set[str] = set()
    sources: dict[str, str] = {}
    try:
        with design_context(str(design)) as ctx:
            callers = ctx.callers
            try:
                # What the design prints stays where it prints it: this is a library call, and
                # swapping the process's sys.stdout here sent every other thread's prints to
                # stderr meanwhile. The CLI sends a design's prints to stderr itself
                # (``cli.handled``): its standard output is read by tools.
                exec(code, module.__dict__)
            except (KeyboardInterrupt, GeneratorExit):
                raise
            except BaseException as exc:
                misused = misused_call(exc, ctx.where())
                if misused is None:
                    raise UserCodeError(user_traceback(exc)) from None
                # A DSL function called with arguments it does not take: a design error at
                # the call, reported with those of the calls before it.
                ctx.stack.clear()
                evaluation = Evaluation(
                    ctx.root, tuple(sort_errors([*ctx.errors, misused])), complete=False
                )
            else:
                evaluation = finish(ctx)
    finally:
        for path in paths:
            sys.path.remove(path)
        for name in set(sys.modules) - before:
            source = getattr(sys.modules[name], "__file__", None)
            if source and _RECORDING:
                _RECORDING[-1].files.add(os.path.abspath(source))
        sources = _forget_design_modules(before, {os.path.abspath(file) for file in callers})
    return replace(evaluation, sources=sources)


def _forget_design_modules(before: set[str], callers: set[str]) -> dict[str, str]:
    """Unload the design module and every module first imported during the load from outside
    the Python installation (its own folder, a sibling ``lib/``, a ``sys.path`` entry...) or
    that made DSL calls (``callers``: a toolset an installed package declares at import), so
    that the next load runs their DSL calls again in its own context: an expression belongs
    to the tree of one load. The standard library, installed distributions and agentgen itself
    stay loaded. Returns the source file of each unloaded module, by name."""
    sources: dict[str, str] = {}
    for name in set(sys.modules) - before:
        module = sys.modules.get(name)
        if (
            name.startswith("_agentgen_design_")
            or _is_design_code(name, module)
            or _made_dsl_calls(module, callers)
        ):
            file = getattr(module, "__file__", None)
            if isinstance(file, str):
                sources[name] = file
            del sys.modules[name]
    return sources


def _made_dsl_calls(module: types.ModuleType | None, callers: set[str]) -> bool:
    file = getattr(module, "__file__", None)
    return isinstance(file, str) and os.path.abspath(file) in callers


def _is_design_code(name: str, module: types.ModuleType | None) -> bool:
    if module is None or name == "agentgen" or name.startswith("agentgen."):
        return False
    file = getattr(module, "__file__", None)
    places = [file] if file else list(getattr(module, "__path__", None) or ())
    return any(
        isinstance(place, str) and not is_installation_path(os.path.abspath(place))
        for place in places
    )
