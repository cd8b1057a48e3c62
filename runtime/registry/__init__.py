"""Tool registries: the consumer-side protocols the runtime reads dynamic catalogs through."""

__all__: list[str] = []
