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

__all__ = ["EXTRAS", "lazy_names"]

#: The optional packages agentgen's names import, by top-level module, and the extra of
#: ``pyproject.toml`` that installs each: a name whose module cannot import one says which.
EXTRAS: Mapping[str, str] = {
    "openai": "openai",
    "anthropic": "anthropic",
    "boto3": "bedrock",
    "botocore": "bedrock",
    "temporalio": "temporal",
    "fastapi": "registry",
    "uvicorn": "registry",
    "redis": "registry",
    "mcp": "mcp",
    "rich": "trace",
    "tiktoken": "tokens",
}


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
        try:  # the getattr too: a home that is a lazy package itself imports on it
            value = getattr(importlib.import_module(home), name)
        except ModuleNotFoundError as exc:
            missing = (exc.name or "").partition(".")[0]
            extra = EXTRAS.get(missing)
            if extra is None:
                raise
            raise ModuleNotFoundError(
                f"{package}.{name} needs {missing}, which is not installed: "
                f"pip install 'agentgen[{extra}]'",
                name=exc.name,
            ) from exc
        if namespace is not None:
            namespace[name] = value
        return value

    def dir_() -> list[str]:
        return names

    return getattr_, dir_
