"""Confirmation: asking a human before a tool runs.

Templates are Jinja2, rendered in a sandbox with strict undefined variables against the call's
canonical JSON arguments: ``{{ amount }}`` reads the argument ``amount``, ``{{ value | tojson }}``
writes a JSON value, and optional arguments are read through ``args``, the whole argument
object: ``{{ args.get("note", "none") }}`` (a bare ``{{ note }}`` fails when the model left it
out). The rendering uses the accepted call's saved contract, never the current catalog. What
``{{ ... }}`` writes has its control and format characters but newlines and tabs escaped, so
an argument cannot rewrite the prompt a person reads (terminal escape sequences, bidi
overrides).

Every render is bounded work (:mod:`agentgen.runtime.contracts.templates`): a template that
goes past its budget of operations or output fails with :class:`ConfirmationBudgetError`, and
the call does not run. The arguments a template sees are the validated payload, the values the
tool will run with (defaults included), so a person confirms exactly what executes. A
schema-typed (registry, MCP) tool's non-integral numbers are the exact decimals the model
wrote; arithmetic mixing them with a template's float literal stays exact
(``{{ amount * 1.2 }}``), and comparisons read the float as written (``amount == 0.1``).
"""

from __future__ import annotations

import decimal
from collections.abc import Mapping
from typing import Any

from jinja2.exceptions import UndefinedError

from agentgen.runtime.contracts.specs import ConfirmationSpec
from agentgen.runtime.contracts.templates import TemplateLimitError, render_template
from agentgen.runtime.runs.steps import ConfirmationRequest, Confirmer, Verdict

__all__ = [
    "ConfirmationBudgetError",
    "ConfirmationError",
    "ConfirmationRequest",
    "Confirmer",
    "Verdict",
    "denied_result",
    "prompt",
    "render",
]


class ConfirmationError(Exception):
    """A template could not be rendered for a call (names the tool and the template)."""


class ConfirmationBudgetError(ConfirmationError):
    """A template went past its stated budget of operations or output (names the tool and the
    limit); the call did not run."""


def render(template: str, arguments: Mapping[str, Any], *, tool_id: str, which: str) -> str:
    context = {key: value for key, value in arguments.items() if key.isidentifier()}
    context["args"] = dict(arguments)
    try:
        return render_template(template, context)
    except TemplateLimitError as exc:
        raise ConfirmationBudgetError(
            f"tool {tool_id!r} {which}: {exc}; the call did not run"
        ) from None
    except Exception as exc:  # TemplateError, and what templates raise (1/0, sandbox limits)
        raise ConfirmationError(f"tool {tool_id!r} {which}: {_failure(exc)}") from None


def _failure(exc: Exception) -> str:
    """What went wrong in a render, with the advice that fits it."""
    if isinstance(exc, UndefinedError):
        return f'{exc}; optional arguments are read as {{{{ args.get("name") }}}}'
    if isinstance(exc, decimal.DecimalException):
        # Raised with the list of its signals as its text: "[<class 'decimal.Overflow'>]".
        signals = exc.args[0] if exc.args and isinstance(exc.args[0], list) else [type(exc)]
        names = ", ".join(getattr(signal, "__name__", str(signal)) for signal in signals)
        return (
            f"decimal arithmetic on a number argument failed ({names}): non-integral numbers "
            "are exact decimals; keep results within about 10**999999, and divide by no zero"
        )
    if isinstance(exc, ArithmeticError | TypeError | ValueError):
        return f"{type(exc).__name__}: {exc}"
    return str(exc)


def prompt(spec: ConfirmationSpec, arguments: Mapping[str, Any], tool_id: str) -> str:
    return render(spec.prompt_template, arguments, tool_id=tool_id, which="confirmation prompt")


def denied_result(spec: ConfirmationSpec, arguments: Mapping[str, Any], tool_id: str) -> str:
    return render(spec.denied_result_template, arguments, tool_id=tool_id, which="denied result")
