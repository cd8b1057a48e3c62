"""Loading a design file: run it in a fresh evaluation context and validate the whole tree.

Three ways a load fails, each shown differently by the CLI:

* :class:`DesignFileError`: the file is missing, not a ``.py`` file, or not valid Python
  (one line, exit code 2);
* :class:`agentgen.dsl.DesignErrors`: the design ran but breaks rules (``file:line`` per
  error, all of them, exit code 1);
* :class:`UserCodeError`: the design's own code raised; the traceback shows the user's frames
  only (exit code 1).
"""

from __future__ import annotations

import importlib.machinery
import itertools
import os
import sys
import traceback
import types
from pathlib import Path

import agentgen.codegen
import agentgen.dsl
from agentgen.codegen.cache import is_library_path
from agentgen.dsl.eval import design_context, finish
from agentgen.dsl.expr import RootExpr

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
    if code is None:
        raise DesignFileError(f"{path}: not valid Python: no code")
    return code


def _is_agentgen_frame(filename: str) -> bool:
    return filename.startswith(_PACKAGE_DIRS) or filename.startswith("<frozen ")


def user_traceback(exc: BaseException) -> str:
    """The traceback of ``exc`` with agentgen's and the import machinery's frames removed.

    When the innermost frame is agentgen's own, the exception is a bug of agentgen rather than
    of the design: the full traceback is kept and labelled as such.
    """
    frames = traceback.extract_tb(exc.__traceback__)
    if frames and _is_agentgen_frame(frames[-1].filename) and not isinstance(exc, SystemExit):
        head = "agentgen internal error while evaluating the design (please report it):\n"
        return head + "".join(traceback.format_exception(exc))
    kept = traceback.StackSummary.from_list(
        [frame for frame in frames if not _is_agentgen_frame(frame.filename)]
    )
    lines = ["Traceback (most recent call last):\n", *kept.format()]
    lines.extend(traceback.format_exception_only(type(exc), exc))
    return "".join(lines)


_RECORDING: list[set[str]] = []


def _record_opens(event: str, args: tuple[object, ...]) -> None:
    if _RECORDING and event == "open" and args and isinstance(args[0], str | bytes):
        name = os.fsdecode(args[0])
        if not name.endswith(".pyc"):
            _RECORDING[-1].add(os.path.abspath(name))


sys.addaudithook(_record_opens)


def load_design(path: str | os.PathLike[str], *, inputs: set[str] | None = None) -> RootExpr:
    """Evaluate and validate the design at ``path``; see the module docstring for failures.

    With ``inputs``, collect the files the evaluation depended on: the design, every module
    it imported and every file it opened (standard library excluded).
    """
    design = Path(path)
    code = _compile(design)
    opened: set[str] = set()
    _RECORDING.append(opened)
    try:
        return _run(design, code)
    finally:
        _RECORDING.pop()
        if inputs is not None:
            inputs.add(str(design.resolve()))
            inputs.update(p for p in opened if os.path.isfile(p) and not is_library_path(p))


def _run(design: Path, code: types.CodeType) -> RootExpr:
    directory = str(design.resolve().parent)
    module_name = f"_agentgen_design_{next(_COUNTER)}"
    module = types.ModuleType(module_name)
    module.__file__ = str(design)
    before = set(sys.modules)
    sys.modules[module_name] = module
    sys.path.insert(0, directory)
    try:
        with design_context(str(design)) as ctx:
            try:
                exec(code, module.__dict__)
            except (KeyboardInterrupt, GeneratorExit):
                raise
            except BaseException as exc:
                raise UserCodeError(user_traceback(exc)) from None
            return finish(ctx)
    finally:
        sys.path.remove(directory)
        for name in set(sys.modules) - before:
            source = getattr(sys.modules[name], "__file__", None)
            if source and _RECORDING:
                _RECORDING[-1].add(os.path.abspath(source))
        _forget_design_modules(before, directory)


def _forget_design_modules(before: set[str], directory: str) -> None:
    """Unload the design module and the modules it imported from its own folder, so that the
    next load runs their DSL calls again in its own context."""
    prefix = directory + os.sep
    for name in set(sys.modules) - before:
        module = sys.modules.get(name)
        file = getattr(module, "__file__", None) or ""
        if name.startswith("_agentgen_design_") or os.path.abspath(file).startswith(prefix):
            del sys.modules[name]
