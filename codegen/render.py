"""Rendering: which files a generation model produces, and their unformatted text.

One Jinja2 template per kind of file (``templates/``), rendered with ``StrictUndefined`` so a
missing value is an error rather than an empty string. Filters only print values as Python
literals; every decision was taken when the model was built.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from agentgen.codegen.generation_model import (
    AgentModel,
    GenerationModel,
    ServiceModel,
    ToolsetModel,
    TypeRef,
)
from agentgen.codegen.pytypes import int_literal
from agentgen.codegen.stamp import PLACEHOLDER, ROOT_DOC
from agentgen.runtime.visible import escape


@dataclass(frozen=True)
class RenderedFile:
    #: Path below the output root, with ``/`` separators.
    path: str
    text: str

    @property
    def is_python(self) -> bool:
        return self.path.endswith(".py")


def escaped(text: str, keep: str = "") -> str:
    """``text`` with every character that is not printable (controls, NUL, line and paragraph
    separators, format and private-use characters, lone surrogates) written as a Python escape,
    except those in ``keep``. What remains is safe inside a literal, a docstring or a comment:
    nothing a tokenizer, an editor or ``str.splitlines`` reads as a line break, nothing
    invisible, nothing UTF-8 cannot encode. Backslashes already in ``text`` are the caller's
    to escape (first)."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch in keep else escape(ch) for ch in text)


def py(value: Any) -> str:
    """A Python literal for a JSON-like value, strings in double quotes (black's style)."""
    if isinstance(value, float) and not math.isfinite(value):
        return f'float("{value}")'  # repr() gives `inf`/`nan`, names Python does not have
    if isinstance(value, int) and not isinstance(value, bool):
        return int_literal(value)  # a design's count may be past repr's digit limit
    if value is None or isinstance(value, bool | float):
        return repr(value)
    if isinstance(value, str):
        # json.dumps escapes quotes, backslashes and C0 controls as Python reads them too.
        return escaped(json.dumps(value, ensure_ascii=False))
    if isinstance(value, tuple):
        return py_tuple(value)
    if isinstance(value, list):
        return "[" + ", ".join(py(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{py(k)}: {py(v)}" for k, v in value.items()) + "}"
    if hasattr(value, "items"):  # read-only mappings (search terms)
        return py(dict(value.items()))
    raise TypeError(f"cannot print {type(value).__name__} as a Python literal")


def py_tuple(values: Any) -> str:
    items = [py(v) for v in values]
    if len(items) == 1:
        return f"({items[0]},)"
    return "(" + ", ".join(items) + ")"


def docstring(text: str, indent: int = 0) -> str:
    """A docstring literal for ``text``, line by line: backslashes, triple quotes and every
    non-printable character but tabs escaped (a NUL or a separator would break the module)."""
    body = text.strip().replace("\\", "\\\\")
    body = escaped(body, keep="\n\t").replace('"""', '\\"\\"\\"')
    lines = body.split("\n")
    pad = " " * indent
    joined = ("\n" + pad).join(line.rstrip() for line in lines)
    if joined.endswith('"'):
        joined += " "
    if len(lines) > 1:
        return f'"""{joined}\n{pad}"""'
    return f'"""{joined}"""'


def class_doc(text: str, indent: int = 4) -> str:
    """The docstring statement of a generated model or enum: part of its contract, since
    pydantic reads the description of its JSON Schema from it.

    A docstring keeps it exactly when every character is printable or a line break, no line
    ends in whitespace and it does not end in a quote (a docstring's tabs, trailing spaces and
    final quote do not survive formatting and ``inspect.cleandoc`` as they were). Otherwise
    the class assigns ``__doc__`` a string literal, which keeps every character.
    """
    lines = text.split("\n")
    simple = (
        all(ch.isprintable() or ch == "\n" for ch in text)
        and all(line == line.rstrip() for line in lines)
        and not text.endswith('"')
    )
    return docstring(text, indent) if simple else f"__doc__ = {py(text)}"


def oneline(text: str) -> str:
    """``text`` on one docstring line: each run of whitespace one space, the rest escaped. It
    is followed by the docstring's closing quotes, so a final double quote gets a space after
    it (as :func:`docstring` does): four quotes in a row end the docstring one quote early."""
    line = escaped(" ".join(text.split()).replace("\\", "\\\\")).replace('"""', "'''")
    return line + " " if line.endswith('"') else line


def comment(text: str) -> str:
    """``text`` safe inside a ``#`` comment: no line break, nothing invisible."""
    return escaped(text)


def type_spec(ref: TypeRef, what: str) -> str:
    if ref.kind == "model":
        return f"model_type(types.{ref.class_name}, {py(ref.schema_json)}, {py(what)})"
    if ref.kind == "schema":
        return f"schema_type({py(ref.schema_json)}, {py(what)})"
    if ref.kind == "empty":
        return f"empty_payload({py(what)})"
    return f"null_result({py(what)})"


@cache
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("agentgen.templates", ""),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.globals["hash_placeholder"] = PLACEHOLDER
    env.filters.update(
        py=py,
        py_tuple=py_tuple,
        docstring=docstring,
        class_doc=class_doc,
        oneline=oneline,
        comment=comment,
        type_spec=type_spec,
    )
    return env


def _render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)


def _package(path: tuple[str, ...]) -> str:
    return "/".join(path)


def _toolset_files(design: str, toolset: ToolsetModel) -> Iterator[RenderedFile]:
    base = _package(toolset.package)
    kind = {"local": "toolset", "mcp": "external MCP toolset", "agent": "agent-exported toolset"}
    doc = (
        f"{kind[toolset.kind].capitalize()} {toolset.name!r}, "
        f"registered as {toolset.registration_name!r}."
    )
    yield RenderedFile(
        f"{base}/__init__.py", _render("package_init.py.jinja", design=design, doc=doc)
    )
    if toolset.classes:
        yield RenderedFile(
            f"{base}/types.py", _render("types.py.jinja", design=design, toolset=toolset)
        )
    yield RenderedFile(
        f"{base}/specs.py", _render("specs.py.jinja", design=design, toolset=toolset)
    )
    yield RenderedFile(
        f"{base}/declarations.py",
        _render("declarations.py.jinja", design=design, toolset=toolset),
    )
    if toolset.kind == "local":
        yield RenderedFile(
            f"{base}/executor.py", _render("executor.py.jinja", design=design, toolset=toolset)
        )
    if toolset.kind == "local" and toolset.publish_to:
        yield RenderedFile(
            f"{base}/provider.py", _render("provider.py.jinja", design=design, toolset=toolset)
        )


def _agent_files(design: str, agent: AgentModel) -> Iterator[RenderedFile]:
    base = _package(agent.package)
    for name, template in (
        ("__init__.py", "agent_init.py.jinja"),
        ("agent.py", "agent.py.jinja"),
        ("specs.py", "agent_specs.py.jinja"),
        ("config.py", "config.py.jinja"),
        ("register.py", "register.py.jinja"),
    ):
        yield RenderedFile(f"{base}/{name}", _render(template, design=design, agent=agent))
    if agent.registry_reads:
        yield RenderedFile(
            f"{base}/registry_tools.py",
            _render("registry_tools.py.jinja", design=design, agent=agent),
        )
    if agent.tool_schemas_json is not None:
        yield RenderedFile(f"{base}/tool_schemas.json", agent.tool_schemas_json)


def _service_files(design: str, service: ServiceModel) -> Iterator[RenderedFile]:
    def package(path: str, doc: str) -> RenderedFile:
        return RenderedFile(path, _render("package_init.py.jinja", design=design, doc=doc))

    doc = f"Generated packages of service {service.name!r}."
    if service.description:
        doc += f"\n\n{service.description}"
    yield package(f"{service.name}/__init__.py", doc)
    if service.toolsets:
        yield package(
            f"{service.name}/toolsets/__init__.py", f"Toolsets owned by service {service.name!r}."
        )
    if service.agents:
        yield package(f"{service.name}/agents/__init__.py", f"Agents of service {service.name!r}.")
    for toolset in service.toolsets:
        yield from _toolset_files(design, toolset)
    for agent in service.agents:
        yield from _agent_files(design, agent)


def render(model: GenerationModel) -> list[RenderedFile]:
    """Every file of the generation, in a stable order (unformatted Python)."""
    design = model.design_name
    files = [
        RenderedFile(
            "__init__.py",
            _render(
                "package_init.py.jinja",
                design=design,
                doc=f"{ROOT_DOC} {design}.",
            ),
        )
    ]
    if model.registries:
        files.append(
            RenderedFile(
                "registries.py",
                _render("registries.py.jinja", design=design, registries=model.registries),
            )
        )
    for service in model.services:
        files.extend(_service_files(design, service))
    return sorted(files, key=lambda f: f.path)
