"""Checker rules for agents' run policies: a tag clause must be able to match, and a policy
must leave the model something to call.

Policies filter on the tags generated specs carry (a tool's tags with its toolset's,
:meth:`~agentgen.dsl.expr.ToolsetExpr.tool_tags`), with the runtime's own predicate, so a
design that passes here filters at run time exactly as checked. Agents that read registries
are exempt: their registry tools arrive at run time with tags of their own.

``AllowTags`` naming a tag no tool of the agent carries is an error: it can let nothing
through, and a misspelt one hides the tools it was written for. ``DenyTags`` differs: denying
a tag the agent's tools lack is a guard, not a mistake, when another tool of the design carries
it (a policy shared by agents) or when no tool carries it yet (a policy written before tools
get the tag: refusing it would have the guard added only after the tools it guards against).
Only a misspelling is refused: a tag no tool carries that is close to one a tool does
(``DenyTags("destructve")`` beside ``"destructive"``), which would deny nothing while reading
as a guard. A tag no tool carries and close to none is accepted with a warning saying it
denies nothing yet; once a tool gets a tag close to it, the misspelling check applies.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from agentgen.dsl.arguments import argument_loc
from agentgen.dsl.errors import DesignError
from agentgen.dsl.expr import AgentExpr, RegistryExpr, RootExpr, ToolsetExpr
from agentgen.dsl.names import closest, did_you_mean, q
from agentgen.runtime.agents.definition import TagClause
from agentgen.runtime.contracts.ids import agent_id, tool_id
from agentgen.runtime.runs.policy import ToolPolicy

__all__ = ["PolicyFindings", "policy_findings"]

#: How many hidden tools an error lists before it only counts the rest.
SHOWN_TOOLS = 5


class _Clause(Protocol):
    @property
    def allowed_any(self) -> tuple[str, ...]: ...

    @property
    def denied_any(self) -> tuple[str, ...]: ...


def tool_policy(clauses: Sequence[_Clause]) -> ToolPolicy:
    """A design's tag clauses as the runtime's policy predicate."""
    return ToolPolicy(tag_clauses=tuple(TagClause(c.allowed_any, c.denied_any) for c in clauses))


@dataclass(frozen=True)
class PolicyFindings:
    """What the policy rules found: errors, and warnings (a ``DenyTags`` guard that denies
    nothing yet), each warning as ``file:line: where: message``."""

    errors: tuple[DesignError, ...]
    warnings: tuple[str, ...]


def policy_findings(root: RootExpr) -> PolicyFindings:
    design_tags = _design_tags(root)
    errors: list[DesignError] = []
    warnings: list[str] = []
    for agent in root.agents():
        for finding in _agent_policy(agent, design_tags):
            if isinstance(finding, DesignError):
                errors.append(finding)
            else:
                warnings.append(finding)
    return PolicyFindings(tuple(errors), tuple(warnings))


def _design_tags(root: RootExpr) -> list[str]:
    """Every tag a tool of the design carries (refused tools' included: their bodies ran)."""
    tags: dict[str, None] = {}
    for toolset in root.toolsets:
        if toolset.is_registry:
            continue
        for tool in (*toolset.tools, *toolset.rejected_decls):
            tags.update(dict.fromkeys(toolset.tool_tags(tool)))
    return sorted(tags)


def _reads_registries(agent: AgentExpr) -> bool:
    return any(
        isinstance(use.target, RegistryExpr)
        or (isinstance(use.target, ToolsetExpr) and use.target.is_registry)
        for use in agent.uses
    )


def _lost_tools(agent: AgentExpr) -> list[tuple[str, tuple[str, ...]]] | None:
    """(tool ID, tags) of each tool the agent's Uses select whose declaration was refused
    (reported), or None when what the agent lost is unknown (a toolset's or such a tool's body
    was refused). A refused tool's body ran, so its tags are what the design says: a clause
    naming a tag only it carries is no mistake of its own, and a policy it passes does not hide
    every tool once it is fixed. The checks then run on the tools that are left, read beside
    these, rather than being skipped; a ``Use`` selecting tools by name lost only those it
    names."""
    lost: list[tuple[str, tuple[str, ...]]] = []
    for use in agent.uses:
        target = use.target
        if not isinstance(target, ToolsetExpr):
            continue
        if target.body_rejected:
            return None
        names = {ref.name for ref in use.subset}
        for tool in target.rejected_decls:
            if use.subset and tool.name not in names:
                continue
            if tool.body_rejected:
                return None
            lost.append((tool_id(target.name, tool.name), target.tool_tags(tool)))
    return lost


def _tools(agent: AgentExpr) -> list[tuple[str, tuple[str, ...]]]:
    """(tool ID, the tags its spec carries) of every compiled tool the agent uses."""
    tools: list[tuple[str, tuple[str, ...]]] = []
    for use in agent.uses:
        target = use.target
        if isinstance(target, ToolsetExpr) and not target.is_registry:
            tools.extend(
                (tool_id(target.name, tool.name), target.tool_tags(tool))
                for tool in use.resolved_tools
            )
    return tools


def _agent_policy(agent: AgentExpr, design_tags: list[str]) -> Iterable[DesignError | str]:
    policy = agent.policy
    if policy is None or not policy.tag_clauses or _reads_registries(agent):
        return
    lost = _lost_tools(agent)
    if lost is None:
        return  # the refused declarations' own errors come first; their tags are unknown
    identifier = agent_id(agent.service.name, agent.name)
    tools = _tools(agent)
    carried = sorted({tag for _, tags in (*tools, *lost) for tag in tags})
    unknown = False
    for clause in policy.tag_clauses:
        func = "AllowTags" if clause.allowed_any else "DenyTags"
        for position, tag in enumerate((*clause.allowed_any, *clause.denied_any)):
            if tag in carried:
                continue
            loc = argument_loc(clause.loc, position)  # the tag at fault, not the clause
            their = f"their tags: {', '.join(carried) or 'none'}"
            agents_tags = (
                f"the tags of agent {q(identifier)}'s tools: {', '.join(carried) or 'none'}"
            )
            if clause.denied_any:
                if tag in design_tags:
                    continue  # a guard against another agent's tools (a shared policy)
                near = closest(tag, design_tags)
                if near is None:
                    # Not yet carried: it denies nothing until a tool gets the tag.
                    yield (
                        f"{loc.short()}: {policy.where()}: DenyTags names tag {q(tag)}, which "
                        "no tool of the design carries yet: it denies nothing until one does "
                        f"({agents_tags})"
                    )
                    continue
                unknown = True
                yield DesignError(
                    loc,
                    policy.where(),
                    f"DenyTags names tag {q(tag)}, which no tool of the design carries, so it "
                    f"would deny nothing; did you mean {q(near)}? Fix the spelling "
                    f"({agents_tags})",
                )
                continue
            unknown = True
            hint = did_you_mean(tag, carried)
            yield DesignError(
                loc,
                policy.where(),
                f"{func} names tag {q(tag)}, which no tool of agent {q(identifier)} carries "
                f"({their}){hint}",
            )
    if unknown or not tools:
        return  # a misspelt tag explains the rest
    predicate = tool_policy(policy.tag_clauses)
    if any(predicate.allows(tid, tags) for tid, tags in (*tools, *lost)):
        return  # a refused tool the policy lets through is reported as refused, not hidden
    shown = [f"{tid} (tags: {', '.join(tags) or 'none'})" for tid, tags in tools[:SHOWN_TOOLS]]
    if len(tools) > SHOWN_TOOLS:
        shown.append(f"and {len(tools) - SHOWN_TOOLS} more")
    yield DesignError(
        policy.loc,
        policy.where(),
        f"the RunPolicy of agent {q(identifier)} hides every tool the agent uses, so its model "
        f"would see none: {', '.join(shown)}; loosen AllowTags/DenyTags, or tag the tools the "
        "agent needs (a Toolset's Tags apply to each of its tools)",
    )
