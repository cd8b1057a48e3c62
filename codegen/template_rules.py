"""Checker rule for confirmation templates: each must render in the runtime's sandbox.

The DSL's rules check a template's syntax and the argument names it reads. The runtime renders
it in its own sandbox (:class:`~agentgen.runtime.contracts.templates.BudgetedSandbox`), which
leaves out what Jinja's plain one offers (the ``random``, ``urlize`` and ``pprint`` filters, the
``lipsum`` and ``namespace`` globals) and compiles every filter and test by name: a template
using one it lacks was accepted by ``validate`` and failed every confirmation at run time. This
rule reads templates with that same sandbox, and compiles them as the runtime does.
"""

from __future__ import annotations

from collections.abc import Iterable

from jinja2 import TemplateSyntaxError, nodes
from jinja2.sandbox import SandboxedEnvironment

from agentgen.dsl.errors import DesignError
from agentgen.dsl.expr import ConfirmationExpr, RootExpr, ToolExpr
from agentgen.dsl.location import SourceLoc
from agentgen.dsl.names import did_you_mean, q
from agentgen.dsl.types import SchemaProblem, properties
from agentgen.runtime.contracts.templates import (
    BudgetedSandbox,
    TemplateLimitError,
    check_template,
)

__all__ = ["template_errors"]

_RUNTIME = BudgetedSandbox()
#: Jinja's plain sandbox, which the DSL's rules read templates with: a global of its own
#: (``lipsum``) is no argument the DSL reports as unknown, though the runtime lacks it.
_PLAIN = SandboxedEnvironment()


def template_errors(root: RootExpr) -> Iterable[DesignError]:
    for toolset in root.toolsets:
        for tool in toolset.tools:
            confirmation = tool.confirmation
            if confirmation is None:
                continue
            for label, text, loc in (
                ("PromptTemplate", confirmation.prompt_template, confirmation.prompt_loc),
                (
                    "DeniedResultTemplate",
                    confirmation.denied_result_template,
                    confirmation.denied_result_loc,
                ),
            ):
                if text is not None:
                    yield from _template(tool, confirmation, label, text, loc or confirmation.loc)


def _template(
    tool: ToolExpr, confirmation: ConfirmationExpr, label: str, text: str, loc: SourceLoc
) -> Iterable[DesignError]:
    def error(message: str) -> DesignError:
        return DesignError(loc, confirmation.where(), f"{label} {message}")

    try:
        tree = _RUNTIME.parse(text)
    except TemplateSyntaxError:
        return  # reported by the DSL's rules
    found = False
    for kind, known, plain, used in (
        ("filter", _RUNTIME.filters, _PLAIN.filters, _names(tree, nodes.Filter)),
        ("test", _RUNTIME.tests, _PLAIN.tests, _names(tree, nodes.Test)),
    ):
        for name in sorted(used - set(known)):
            found = True
            why = (
                "the runtime's template sandbox leaves it out (random, urlize and pprint: not "
                "deterministic, or slow on long text); remove it"
                if name in plain
                else f"Jinja has no such {kind}{did_you_mean(name, known)}"
            )
            yield error(
                f"uses the {kind} {q(name)}, which confirmation templates cannot use: {why}"
            )
    read = {name.name for name in tree.find_all(nodes.Name) if name.ctx == "load"}
    bound = {name.name for name in tree.find_all(nodes.Name) if name.ctx != "load"}
    unavailable = sorted(
        (read & set(_PLAIN.globals)) - set(_RUNTIME.globals) - bound - _argument_names(tool)
    )
    for name in unavailable:
        found = True
        yield error(
            f"uses {q(name)}, which confirmation templates cannot use: the runtime's template "
            "sandbox leaves it out (its globals: "
            f"{', '.join(sorted(n for n in _RUNTIME.globals if not n.startswith('_')))})"
        )
    if found:
        return
    try:
        check_template(text)  # compiled as the runtime compiles it, with its length limit
    except TemplateLimitError as exc:
        yield error(f"is too long: {exc}")
    except TemplateSyntaxError as exc:
        yield error(f"cannot be compiled by the runtime: {exc.message}")


def _names(tree: nodes.Template, kind: type[nodes.Filter] | type[nodes.Test]) -> set[str]:
    return {node.name for node in tree.find_all(kind)}


def _argument_names(tool: ToolExpr) -> set[str]:
    """Arguments shadow globals of the same name in the render's context."""
    if tool.args is None:
        return set()
    try:
        return set(properties(tool.args))
    except SchemaProblem:
        return set()  # reported by the DSL's rules
