"""Confirmation: asking a human before a tool runs.

Templates are Jinja2, rendered in a sandbox with strict undefined variables against the call's
canonical JSON arguments: ``{{ amount }}`` reads the argument ``amount``, ``{{ value | tojson }}``
writes a JSON value, and optional arguments are read through ``args``, the whole argument
object: ``{{ args.get("note", "none") }}`` (a bare ``{{ note }}`` fails when the model left it
out). The rendering uses the accepted call's saved contract, never the current catalog.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from jinja2 import StrictUndefined
from jinja2.sandbox import ImmutableSandboxedEnvironment

from agentgen.runtime.contracts.codecs import encode_exact
from agentgen.runtime.contracts.specs import ConfirmationSpec

__all__ = [
    "ConfirmationError",
    "ConfirmationRequest",
    "Confirmer",
    "denied_result",
    "prompt",
    "render",
]


@dataclass(frozen=True)
class ConfirmationRequest:
    run_id: str
    agent_id: str
    tool_id: str
    tool_call_id: str
    title: str | None
    prompt: str
    arguments: Mapping[str, Any]


#: Decides a confirmation: True runs the tool, False answers with the denied-result template.
Confirmer = Callable[[ConfirmationRequest], Awaitable[bool]]


class ConfirmationError(Exception):
    """A template could not be rendered for a call (names the tool and the template)."""


def _tojson(value: Any) -> str:
    # Arguments are decoded exactly (non-integers as ``Decimal``): write those as the numbers
    # they are, not as strings.
    if isinstance(value, Decimal):
        return encode_exact(value)
    if isinstance(value, Mapping):
        items = sorted(((str(k), v) for k, v in value.items()), key=lambda kv: kv[0])
        return "{" + ", ".join(f"{_tojson(k)}: {_tojson(v)}" for k, v in items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_tojson(v) for v in value) + "]"
    text: str = json.dumps(value, ensure_ascii=False, default=str)
    return text


def _environment() -> ImmutableSandboxedEnvironment:
    # Immutable: a template cannot change the arguments the confirmer is then shown.
    env = ImmutableSandboxedEnvironment(undefined=StrictUndefined, autoescape=False)
    env.filters["tojson"] = _tojson
    return env


_ENV = _environment()


def render(template: str, arguments: Mapping[str, Any], *, tool_id: str, which: str) -> str:
    context = {key: value for key, value in arguments.items() if key.isidentifier()}
    context["args"] = dict(arguments)
    try:
        return _ENV.from_string(template).render(context)
    except Exception as exc:  # TemplateError, and what templates raise (1/0, sandbox limits)
        raise ConfirmationError(
            f"tool {tool_id!r} {which}: {exc}; optional arguments are read as "
            '{{ args.get("name") }}'
        ) from None


def prompt(spec: ConfirmationSpec, arguments: Mapping[str, Any], tool_id: str) -> str:
    return render(spec.prompt_template, arguments, tool_id=tool_id, which="confirmation prompt")


def denied_result(spec: ConfirmationSpec, arguments: Mapping[str, Any], tool_id: str) -> str:
    return render(spec.denied_result_template, arguments, tool_id=tool_id, which="denied result")
