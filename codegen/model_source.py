"""Where a design's pydantic model, or one of its fields, is written in the user's source.

A field generated code cannot reproduce is the user's to change, often in a module other than
the design file (``from .models import Weird``): an error shown at the ``Args(...)`` call
would send them to the wrong file. Classes record no line numbers, so the class is found in
its module's source by qualified name with :mod:`ast`, and the field by its annotated
assignment in the class body (in the base class that declares it, for an inherited field).

The loader unloads the design's own modules before the checks run, so a module's file comes
from ``sources`` (module name → file, kept by the loader) before ``sys.modules``.
"""

from __future__ import annotations

import ast
import functools
import inspect
import sys
import tokenize
from collections.abc import Mapping

from agentgen.dsl.location import SourceLoc

__all__ = ["model_loc"]


def model_loc(cls: type, field: str | None, sources: Mapping[str, str]) -> SourceLoc | None:
    """The span of ``field``'s declaration in ``cls`` (or of the ``class`` statement when
    ``field`` is None or not found in the class body); None when the source cannot be read
    (a class made by ``create_model``, or defined in a function)."""
    owner = _declaring_class(cls, field) if field is not None else cls
    file = sources.get(owner.__module__) or getattr(
        sys.modules.get(owner.__module__), "__file__", None
    )
    if not isinstance(file, str):
        return None
    node = _class_node(_parse(file, _read(file)), owner.__qualname__)
    if node is None:
        return None
    target: ast.stmt = node
    if field is not None:
        for stmt in node.body:
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and stmt.target.id == field
            ):
                target = stmt  # the last one counts, as for the class body itself
    end_line = target.end_lineno if target.end_lineno is not None else target.lineno
    return SourceLoc(file, target.lineno, target.col_offset, end_line, target.end_col_offset or 0)


def _declaring_class(cls: type, field: str) -> type:
    """The class of ``cls``'s MRO whose own body annotates ``field`` (pydantic's fields
    include the ones inherited from base models)."""
    for base in cls.__mro__:
        if field in inspect.get_annotations(base):
            return base
    return cls


def _read(file: str) -> str:
    """The file's text as it is now (not ``linecache``'s copy, which may be of another file
    of the same relative name, read before the current folder changed)."""
    try:
        with tokenize.open(file) as source:
            return source.read()
    except (OSError, SyntaxError, UnicodeDecodeError):
        return ""


@functools.lru_cache(maxsize=16)
def _parse(file: str, text: str) -> ast.Module | None:
    """The module's syntax tree, cached per file and text: every field of every model of a
    module may be reported, and a large module is slow to parse."""
    if not text:
        return None
    try:
        return ast.parse(text, file)
    except (SyntaxError, ValueError):
        return None


def _class_node(tree: ast.Module | None, qualname: str) -> ast.ClassDef | None:
    """The ``class`` statement of ``qualname`` (nested classes included; not classes in
    functions, whose qualnames go through ``<locals>``)."""
    if tree is None:
        return None
    body: list[ast.stmt] = tree.body
    found: ast.ClassDef | None = None
    for part in qualname.split("."):
        found = None
        for stmt in body:
            if isinstance(stmt, ast.ClassDef) and stmt.name == part:
                found = stmt  # the last definition is the one the module kept
        if found is None:
            return None
        body = found.body
    return found
