"""A Temporal namespace the server does not have, named before the server's bare words.

The server answers a request in a namespace it lacks with ``NOT_FOUND: Namespace nope is not
found.``: no address, and nothing about what to do. A worker checks its namespace before it
polls; the engine asks when a request of its comes back ``NOT_FOUND`` (which is also how the
server says a run is unknown), so a run is never reported missing from a namespace that is.
"""

from __future__ import annotations

from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

__all__ = ["NamespaceNotFoundError", "require_namespace"]


class NamespaceNotFoundError(LookupError):
    """The Temporal server has no such namespace: nothing can run or be found in it."""


async def require_namespace(client: Client, choose: str) -> None:
    """Raise :class:`NamespaceNotFoundError` when ``client``'s namespace does not exist on its
    server; ``choose`` says where to give another one (an option, a constructor argument)."""
    request = DescribeNamespaceRequest(namespace=client.namespace)
    try:
        await client.workflow_service.describe_namespace(request)
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:
            raise
        raise NamespaceNotFoundError(
            f"Temporal namespace {client.namespace!r} does not exist on "
            f"{client.service_client.config.target_host}: create it (temporal operator "
            f"namespace create) or pass an existing one ({choose})"
        ) from None
