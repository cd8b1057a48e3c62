"""The builders of the generation model, one module per kind of thing built.

:func:`agentgen.codegen.model_builder.build` assembles them for a checked design:
``owners`` (which service owns each toolset), ``types`` (types and schemas,
shared with the checker), ``toolsets``, ``agents``, ``registries``, and ``names`` (the names
generated code defines, shared with the checker's collision rules).
"""

__all__: list[str] = []
