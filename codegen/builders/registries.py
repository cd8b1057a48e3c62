"""Registry models: the settings a design declares for each registry it uses."""

from __future__ import annotations

from agentgen.codegen.generation_model import RegistryModel, RetryModel
from agentgen.dsl.expr import RegistryExpr
from agentgen.dsl.validate import DEFAULT_API_VERSION

__all__ = ["build_registry"]


def build_registry(registry: RegistryExpr) -> RegistryModel:
    """The settings of a declared registry, as the generated ``registries.py`` prints them."""
    retry = registry.retry
    return RegistryModel(
        name=registry.name,
        url=registry.url or "",
        api_version=registry.api_version or DEFAULT_API_VERSION,
        description=registry.description,
        timeout=registry.timeout,
        sync_interval=registry.sync_interval,
        cache_ttl=registry.cache_ttl,
        retry=RetryModel(retry.max_retries, retry.backoff_base, retry.backoff_max)
        if retry is not None
        else None,
    )
