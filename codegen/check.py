"""The one checker: every rule that needs the whole design, in one pass that never raises.

It adds the generator's rules to the DSL's (which :mod:`agentgen.dsl.pipeline` already ran):
types that generated code cannot reproduce, JSON Schemas that are no valid contract, names that
would collide in generated code or in provider requests. Every problem of a design comes out
of one run; a design it passes is one the builders can turn into code without further checks,
so an exception from the builders afterwards is a bug in agentgen, never a design error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from pydantic import ValidationError

from agentgen.codegen.builders.names import (
    REGISTRIES_MODULE,
    executor_class,
    subset_executor_class,
)
from agentgen.codegen.builders.owners import Ownership, assign_owners, toolset_kind
from agentgen.codegen.builders.toolsets import declared_toolset
from agentgen.codegen.builders.types import TypeAnalysis, analyze_types
from agentgen.codegen.generation_model import ToolsetModel
from agentgen.codegen.policy_rules import policy_findings
from agentgen.codegen.template_rules import template_errors
from agentgen.dsl.errors import DesignError, sort_errors
from agentgen.dsl.expr import AgentExpr, RootExpr, ToolsetExpr, UseExpr
from agentgen.dsl.location import SourceLoc
from agentgen.dsl.names import q
from agentgen.dsl.pipeline import Evaluation
from agentgen.runtime.adapters.names import provider_name
from agentgen.runtime.contracts.declarations import ToolSchema, ToolsetDeclaration, shown
from agentgen.runtime.contracts.ids import agent_id, tool_id
from agentgen.runtime.contracts.versions import VERSION_RULE, version_problem

__all__ = ["CheckedDesign", "check_design"]


@dataclass(frozen=True)
class CheckedDesign:
    """A design with every error of it, and what the checks learnt that the builders reuse."""

    root: RootExpr
    errors: tuple[DesignError, ...]
    warnings: tuple[str, ...]
    ownership: Ownership
    types: TypeAnalysis
    #: The model of each generated toolset, by ``id()`` of its expression: built to check its
    #: declaration texts, reused by the builders (a large design is not built twice).
    toolsets: Mapping[int, ToolsetModel] = field(default_factory=lambda: MappingProxyType({}))


def check_design(evaluation: Evaluation) -> CheckedDesign:
    root = evaluation.root
    ownership = assign_owners(root)
    if not evaluation.complete:
        # The design stopped part way (a DSL call Python refused): what it did not declare
        # would only come out as follow-on errors.
        return CheckedDesign(
            root, tuple(evaluation.errors), ownership.warnings, ownership, TypeAnalysis()
        )
    types = analyze_types(root, evaluation.sources)
    policies = policy_findings(root)
    errors = [
        *evaluation.errors,
        *types.errors,
        *_agent_name_collisions(root),
        *_reserved_service_names(root),
        *policies.errors,
        *template_errors(root),
        *_version_pins(root),
    ]
    toolsets: dict[int, ToolsetModel] = {}
    if not errors:
        errors.extend(_nothing_declared(root))
    # Checked beside the other errors, on every toolset none of them is about: a text only the
    # declaration refuses (a title with a newline) no longer waited for every other error of
    # the design to be fixed before it was reported.
    errors.extend(
        _declaration_errors(root, ownership, types, toolsets, skip=_toolsets_in_error(root, errors))
    )
    return CheckedDesign(
        root,
        tuple(sort_errors(dict.fromkeys(errors))),
        (*ownership.warnings, *policies.warnings),
        ownership,
        types,
        MappingProxyType(toolsets),
    )


def _declaration_errors(
    root: RootExpr,
    ownership: Ownership,
    types: TypeAnalysis,
    built: dict[int, ToolsetModel],
    skip: frozenset[int] = frozenset(),
) -> Iterable[DesignError]:
    """Texts of a generated toolset that its registry declaration would refuse:
    ``declarations.tool_schemas()`` and ``toolset()``, which the provider of a ``PublishTo``
    toolset publishes, validate them with the runtime's own models, as every registry consumer
    does. Those keep titles, tags, labels and server-data kinds to one line of at most 256
    characters and every description free of control and format characters but line breaks
    (an escape or a bidi mark could disguise what a person reads). Every toolset's package has
    those functions, published or not: a text they refuse is refused here, at its tool, rather
    than a generated function raising when called (the provider failing at start-up). Runs on
    each toolset but those in ``skip`` (:func:`_toolsets_in_error`): it builds each one's
    model (kept in ``built``, which the builders reuse)."""
    for toolset in root.toolsets:
        owner = ownership.owner(toolset)
        if toolset.is_registry or owner is None or id(toolset) in skip:
            continue
        model, declarations = declared_toolset(toolset, owner, types.of(toolset))
        built[id(toolset)] = model
        # The model's tools are the toolset's, in order (looking each up by name was
        # quadratic in the size of a toolset).
        for expr, tool, declaration in zip(toolset.tools, model.tools, declarations, strict=True):
            try:
                ToolSchema.model_validate(declaration)
            except ValidationError as exc:
                yield DesignError(expr.loc, expr.where(), _refused(q(tool.id), exc))
        try:
            ToolsetDeclaration.model_validate(
                {
                    "name": model.registration_name,
                    "description": model.description,
                    "tags": list(model.tags),
                }
            )
        except ValidationError as exc:
            yield DesignError(toolset.loc, toolset.where(), _refused(toolset.eval_name(), exc))


def _toolsets_in_error(root: RootExpr, errors: Iterable[DesignError]) -> frozenset[int]:
    """The ``id()`` of each toolset an error is about, or that lost a declaration (refused,
    reported): its model is built from what the design got right, which then says nothing
    sure of it. An error is about a toolset when it was reported inside it (its ``where``
    path runs through the toolset, or through the ``Use``/``Export`` that defines it in
    place). Errors elsewhere (another toolset, an agent's ``Deferred``) leave it checked."""
    wheres = {error.where for error in errors}
    skip: set[int] = set()
    for toolset in root.toolsets:
        if toolset.body_rejected or toolset.rejected_decls or toolset.refused:
            skip.add(id(toolset))
            continue
        paths = [toolset.where()]
        parent = toolset.parent
        if parent is not None:  # defined in place: its body ran inside the Use or Export
            paths.extend(f"{parent.where()} › {f}({toolset.name})" for f in ("Use", "Export"))
        if any(w == p or w.startswith(p + " › ") for w in wheres for p in paths):
            skip.add(id(toolset))
    return frozenset(skip)


def _refused(what: str, exc: ValidationError) -> str:
    problems = "; ".join(
        f"{'.'.join(str(p) for p in e['loc']).removeprefix('consumer_contract.')} "
        f"{shown(e['input'])}: {e['msg'].removeprefix('Value error, ')}"
        for e in exc.errors()
    )
    return (
        f"the registry declaration generated for {what} would be refused when the generated "
        "package builds it (declarations.tool_schemas() and toolset(), what PublishTo "
        f"publishes): {problems}; in every toolset, "
        "titles, tags, required labels and server-data kinds are single lines of at most "
        "256 characters, and no text may hold a control or format character but line breaks "
        "in descriptions and the zero-width (non-)joiners writing needs"
    )


def _version_pins(root: RootExpr) -> Iterable[DesignError]:
    """A ``Version`` pin no published toolset can have: a published version follows the rule
    providers and the registry hold it to (:func:`version_problem`). Such a pin (a zero-width
    space pasted with it, a newline) never matches, and every run of the agent failed with
    ``VersionMismatchError``; it is refused at its line instead, by that same rule."""
    for agent in root.agents():
        for use in agent.uses:
            pin = use.version
            if pin is None:
                continue
            problem = version_problem(pin.version)
            if problem is not None:
                yield DesignError(
                    pin.loc,
                    use.where(),
                    f"Version {shown(pin.version)} can never match: a published toolset's "
                    f"version is {VERSION_RULE} ({problem}); write the version as its provider "
                    "publishes it",
                )


def _nothing_declared(root: RootExpr) -> Iterable[DesignError]:
    """A design that declares nothing is a mistake (DSL calls that never ran), not an empty
    generation: generating it would remove every package generated before."""
    if root.services or root.toolsets or root.registries:
        return
    yield DesignError(
        SourceLoc(root.file, 0),
        "",
        "the design declares nothing: no Service, Toolset or Registry call ran while it was "
        "evaluated; call them at the module's top level (calls under "
        '`if __name__ == "__main__":` or in a function nothing calls never run)',
    )


def _agent_name_collisions(root: RootExpr) -> Iterable[DesignError]:
    for agent in root.agents():
        yield from _collisions(agent)


def _collisions(agent: AgentExpr) -> Iterable[DesignError]:
    """Names that must stay distinct within one agent: what models see of its tools
    (sanitised provider names) and the executor classes its config imports or defines (its
    own protocol for a toolset it uses some tools of) together."""
    identifier = agent_id(agent.service.name, agent.name)
    sent: dict[str, str] = {}
    classes: dict[str, str] = {}
    for use in agent.uses:
        target = use.target
        if not isinstance(target, ToolsetExpr) or target.is_registry:
            continue
        for tool in use.resolved_tools:
            tid = tool_id(target.name, tool.name)
            name = provider_name(tid)
            other = sent.setdefault(name, tid)
            if other != tid:
                yield _error(
                    use,
                    f"tools {q(other)} and {q(tid)} of agent {q(identifier)} are both sent to "
                    f"models as {q(name)} (provider names replace '.' and every character "
                    "outside [A-Za-z0-9_-] with '_'), so a call to one could not be told from a "
                    "call to the other; rename one of the tools or toolsets",
                )
        if toolset_kind(target) != "local":
            continue
        subset = len(use.resolved_tools) != len(target.tools)
        executor = (
            subset_executor_class(agent.name, target.name)
            if subset
            else executor_class(target.name)
        )
        owner = classes.setdefault(executor, target.name)
        if owner != target.name:
            yield _error(
                use,
                f"toolsets {q(owner)} and {q(target.name)} both generate the executor class "
                f"{executor}, which the config of agent {q(identifier)} imports together; rename "
                "one of the toolsets",
            )


def _error(use: UseExpr, message: str) -> DesignError:
    return DesignError(use.loc, use.where(), message)


def _reserved_service_names(root: RootExpr) -> Iterable[DesignError]:
    if not root.registries:
        return
    for service in root.services:
        if service.name == REGISTRIES_MODULE:
            yield DesignError(
                service.loc,
                service.where(),
                f"service name {q(service.name)} is taken by the generated module "
                f"{REGISTRIES_MODULE}.py that holds the settings of the design's registries; "
                "rename the service",
            )
