"""Names a package exports without importing their modules until first use.

``agentgen.runtime``, ``agentgen.runtime.adapters`` and ``agentgen.codegen`` export many names
whose modules are costly or optional (a provider SDK, the generator's design machinery): an
application pays only for what it touches, and a regeneration answered from the cache imports
nothing it does not need.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str,
    homes: Mapping[str, str],
    exported: Iterable[str],
    *,
    submodules: Iterable[str] = (),
    namespace: dict[str, Any] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module ``__getattr__`` and ``__dir__`` for ``package``: each name of ``homes`` is read
    from its home module on first use (and kept in ``namespace``, the package's globals, when
    given); each of ``submodules`` is imported as ``package.<name>``."""
    modules = frozenset(submodules)
    names = sorted(exported)

    def getattr_(name: str) -> Any:
        if name in modules:
            return importlib.import_module(f"{package}.{name}")
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        if namespace is not None:
            namespace[name] = value
        return value

    def dir_() -> list[str]:
        return names

    return getattr_, dir_
