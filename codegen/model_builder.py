"""The whole generation model of a checked design, assembled from the other builders.

:func:`build` takes a :class:`~agentgen.codegen.check.CheckedDesign` without errors; the
checker already found every problem, so nothing here reports design errors and an exception
is a bug in agentgen.
"""

from __future__ import annotations

from pathlib import Path

from agentgen.codegen.builders.agents import build_agent
from agentgen.codegen.builders.registries import build_registry
from agentgen.codegen.builders.toolsets import build_toolset
from agentgen.codegen.check import CheckedDesign
from agentgen.codegen.generation_model import GenerationModel, ServiceModel, ToolsetModel

__all__ = ["build"]


def build(checked: CheckedDesign) -> GenerationModel:
    if checked.errors:
        raise ValueError(
            f"build() needs a design without errors; this one has {len(checked.errors)} "
            "(check_design reports them)"
        )
    root = checked.root
    toolsets: dict[int, ToolsetModel] = {}
    services: list[ServiceModel] = []
    for service in root.services:
        owned: list[ToolsetModel] = []
        for toolset in root.toolsets:
            if toolset.is_registry or checked.ownership.owner(toolset) is not service:
                continue
            model = checked.toolsets.get(id(toolset)) or build_toolset(
                toolset, service, checked.types.of(toolset)
            )
            toolsets[id(toolset)] = model
            owned.append(model)
        services.append(ServiceModel(service.name, tuple(owned), ()))
    # Agents come after every toolset: an agent may use a toolset another service owns.
    services = [
        ServiceModel(
            model.name,
            model.toolsets,
            tuple(build_agent(a, toolsets) for a in s.agents),
            s.description,
        )
        for model, s in zip(services, root.services, strict=True)
    ]
    design_name = Path(root.file).name  # a backslash is part of a POSIX file name
    return GenerationModel(
        design_name,
        tuple(services),
        checked.warnings,
        tuple(build_registry(r) for r in root.registries),
    )
