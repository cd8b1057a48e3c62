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
from typing import Any

from jinja2 import StrictUndefined, TemplateError
from jinja2.sandbox import SandboxedEnvironment

from agentgen.runtime.specs import ConfirmationSpec


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
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _environment() -> SandboxedEnvironment:
    env = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False)
    env.filters["tojson"] = _tojson
    return env


_ENV = _environment()


def render(template: str, arguments: Mapping[str, Any], *, tool_id: str, which: str) -> str:
    context = {key: value for key, value in arguments.items() if key.isidentifier()}
    context["args"] = dict(arguments)
    try:
        return _ENV.from_string(template).render(context)
    except TemplateError as exc:
        raise ConfirmationError(
            f"tool {tool_id!r} {which}: {exc}; optional arguments are read as "
            '{{ args.get("name") }}'
        ) from None


def prompt(spec: ConfirmationSpec, arguments: Mapping[str, Any], tool_id: str) -> str:
    return render(spec.prompt_template, arguments, tool_id=tool_id, which="confirmation prompt")


def denied_result(spec: ConfirmationSpec, arguments: Mapping[str, Any], tool_id: str) -> str:
    return render(spec.denied_result_template, arguments, tool_id=tool_id, which="denied result")
