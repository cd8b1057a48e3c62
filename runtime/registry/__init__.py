"""Tool registries: the consumer protocols, the registry service, its stores, client and SDK.

``client`` holds the protocols the runtime reads dynamic catalogs through. The rest is the
registry itself (``agentgen registry serve``) and what talks to it: :class:`HttpRegistryClient`
and :class:`HttpResultStream` (consumers), :func:`serve_toolset` (providers). Names load on
first use, so the run loop importing the protocols pays nothing for the service's libraries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentgen.runtime.lazy_names import lazy_names

if TYPE_CHECKING:
    from agentgen.runtime.registry.admission import Limits as Limits
    from agentgen.runtime.registry.auth import TokenTable as TokenTable
    from agentgen.runtime.registry.http_client import (
        HttpRegistryClient as HttpRegistryClient,
    )
    from agentgen.runtime.registry.http_client import (
        HttpResultStream as HttpResultStream,
    )
    from agentgen.runtime.registry.http_client import RetryPolicy as RetryPolicy
    from agentgen.runtime.registry.http_client import (
        connect_registry as connect_registry,
    )
    from agentgen.runtime.registry.local import LocalRegistry as LocalRegistry
    from agentgen.runtime.registry.provider import BatchCompleter as BatchCompleter
    from agentgen.runtime.registry.provider import RegistryClock as RegistryClock
    from agentgen.runtime.registry.provider import ServeOptions as ServeOptions
    from agentgen.runtime.registry.provider import ServeReport as ServeReport
    from agentgen.runtime.registry.provider import (
        ToolOverloadedError as ToolOverloadedError,
    )
    from agentgen.runtime.registry.provider import serve_toolset as serve_toolset
    from agentgen.runtime.registry.service import ServiceConfig as ServiceConfig
    from agentgen.runtime.registry.service import create_app as create_app
    from agentgen.runtime.registry.stores import open_store as open_store

__all__ = [
    "BatchCompleter",
    "HttpRegistryClient",
    "HttpResultStream",
    "Limits",
    "LocalRegistry",
    "RegistryClock",
    "RetryPolicy",
    "ServeOptions",
    "ServeReport",
    "ServiceConfig",
    "TokenTable",
    "ToolOverloadedError",
    "connect_registry",
    "create_app",
    "open_store",
    "serve_toolset",
]

_HOMES = {
    "Limits": "admission",
    "TokenTable": "auth",
    "HttpRegistryClient": "http_client",
    "HttpResultStream": "http_client",
    "RetryPolicy": "http_client",
    "connect_registry": "http_client",
    "LocalRegistry": "local",
    "BatchCompleter": "provider",
    "RegistryClock": "provider",
    "ServeOptions": "provider",
    "ServeReport": "provider",
    "ToolOverloadedError": "provider",
    "serve_toolset": "provider",
    "ServiceConfig": "service",
    "create_app": "service",
    "open_store": "stores",
}


__getattr__, __dir__ = lazy_names(
    __name__,
    {name: f"{__name__}.{home}" for name, home in _HOMES.items()},
    __all__,
    namespace=globals(),
)
