"""The ``gen_ai.*`` names agentgen reports are the GenAI semantic conventions' own, as the
installed ``opentelemetry-semantic-conventions`` package spells them (its attribute set: the
provider is ``gen_ai.provider.name``, which replaced ``gen_ai.system``)."""

from __future__ import annotations

import re
from pathlib import Path

from opentelemetry.semconv._incubating.attributes import error_attributes, gen_ai_attributes
from opentelemetry.semconv._incubating.metrics import gen_ai_metrics

from agentgen.runtime.telemetry import names

ROOT = Path(__file__).resolve().parents[2]


def convention_names() -> set[str]:
    found = set()
    for module in (gen_ai_attributes, gen_ai_metrics, error_attributes):
        found.update(v for k, v in vars(module).items() if k.isupper() and isinstance(v, str))
    return found


def ours() -> dict[str, str]:
    return {n: v for n in names.__all__ if isinstance(v := getattr(names, n), str)}


def test_every_gen_ai_name_is_the_conventions() -> None:
    known = convention_names()
    borrowed = {n: v for n, v in ours().items() if not v.startswith("agentgen.")}
    assert borrowed, "the GenAI names are in use"
    assert {n: v for n, v in borrowed.items() if v not in known} == {}
    assert names.PROVIDER == gen_ai_attributes.GEN_AI_PROVIDER_NAME
    assert gen_ai_attributes.GEN_AI_SYSTEM not in ours().values()


def test_everything_else_is_under_agentgen() -> None:
    assert all(v.startswith(("gen_ai.", "error.", "agentgen.")) for v in ours().values())


def test_the_runtime_spells_span_attributes_through_the_names_module() -> None:
    """No ``gen_ai.`` or ``agentgen.`` attribute literal outside the telemetry package (logger
    names and metadata keys aside), so that the docs' table and the code cannot drift."""
    literal = re.compile(r"""["'](gen_ai\.[a-z_.]+)["']""")
    strays = [
        f"{path.relative_to(ROOT)}: {match}"
        for path in (ROOT / "runtime").rglob("*.py")
        if "telemetry" not in path.parts
        for match in literal.findall(path.read_text(encoding="utf-8"))
    ]
    assert strays == []
