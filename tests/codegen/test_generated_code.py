"""Generated packages: clean (mypy --strict, black, ruff), faithful and usable."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pydantic import BaseModel

from agentgen.runtime.contracts.codecs import PayloadError
from agentgen.runtime.contracts.declarations import ToolsetDeclaration
from agentgen.runtime.contracts.specs import ToolSpec
from agentgen.runtime.contracts.wire import fingerprint
from agentgen.runtime.search.document import search_document
from tests.codegen.helpers import EXAMPLES, ROOT, generate_design, run_tool

KITCHEN_SINK = ROOT / "tests" / "designs" / "kitchen_sink.py"


@pytest.fixture(scope="module")
def sink(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The kitchen-sink design generated into an importable package ``sink_gen``."""
    base = tmp_path_factory.mktemp("sink")
    generate_design(KITCHEN_SINK, base / "sink_gen")
    sys.path.insert(0, str(base))
    try:
        yield base / "sink_gen"
    finally:
        sys.path.remove(str(base))
        for name in [m for m in sys.modules if m == "sink_gen" or m.startswith("sink_gen.")]:
            del sys.modules[name]


def module(name: str) -> ModuleType:
    return importlib.import_module(f"sink_gen.{name}")


def test_mypy_strict_passes_on_generated_trees(sink: Path) -> None:
    trees = [str(sink), str(EXAMPLES / "records" / "gen"), str(EXAMPLES / "company" / "gen")]
    done = run_tool("mypy", "--strict", "--no-incremental", *trees, cwd=sink.parent)
    assert done.returncode == 0, done.stdout + done.stderr


def test_black_check_passes_on_generated_trees(sink: Path) -> None:
    trees = [str(sink), str(EXAMPLES / "records" / "gen"), str(EXAMPLES / "company" / "gen")]
    done = run_tool("black", "--check", "--quiet", *trees, cwd=sink.parent)
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_lint_passes_on_generated_trees(sink: Path) -> None:
    # Long lines are JSON Schema string literals, which black (the style of record) keeps whole.
    done = run_tool(
        "ruff",
        "check",
        "--isolated",
        "--select",
        "E,F,I,UP,B,SIM,RUF",
        "--ignore",
        "E501",
        str(sink),
        cwd=sink.parent,
    )
    assert done.returncode == 0, done.stdout + done.stderr


TOOLSETS = ("tickets", "weather", "notes", "ask_expert")


def all_specs() -> list[ToolSpec]:
    specs: list[ToolSpec] = []
    for name in TOOLSETS:
        specs.extend(module(f"helpdesk.toolsets.{name}.specs").SPECS)
    return specs


def test_generated_models_have_the_emitted_schemas(sink: Path) -> None:
    checked = 0
    for spec in all_specs():
        toolset = spec.id.split(".")[0]
        types = (
            module(f"helpdesk.toolsets.{toolset}.types")
            if toolset in ("tickets", "ask_expert")
            else None
        )
        for type_spec, mode in ((spec.payload, "validation"), (spec.result, "serialization")):
            model = getattr(types, type_spec.name or "", None)
            if model is None:
                assert type_spec.name is None, spec.id
                continue
            assert isinstance(model, type) and issubclass(model, BaseModel)
            generated = {"$schema": "https://json-schema.org/draft/2020-12/schema"}
            generated.update(model.model_json_schema(by_alias=True, mode=mode))  # type: ignore[arg-type]
            assert generated == type_spec.schema(), f"{spec.id} {mode}"
            checked += 1
    assert checked == 11


def test_mutually_recursive_models_are_rebuilt(sink: Path) -> None:
    types = module("helpdesk.toolsets.tickets.types")
    assert "File.model_rebuild()" in (sink / "helpdesk/toolsets/tickets/types.py").read_text()
    folder = types.Folder.model_validate(
        {"name": "a", "files": [{"name": "f", "parent": {"name": "b"}}]}
    )
    assert folder.files[0].parent.name == "b"


def test_search_documents_are_the_shared_tokenizers(sink: Path) -> None:
    for spec in all_specs():
        assert spec.search == search_document(
            spec.id, spec.title, spec.description, spec.payload.schema()
        )
    get = module("helpdesk.toolsets.tickets.specs").GET_SPEC
    assert get.title == "Get Ticket" and get.id == "tickets.get"
    ping = module("helpdesk.toolsets.tickets.specs").PING_SPEC
    assert ping.title == "Ping"


def test_tool_schemas_are_fresh_and_independent(sink: Path) -> None:
    declarations = module("helpdesk.toolsets.tickets.declarations")
    first = declarations.tool_schemas()
    first[0].payload_schema["properties"]["text"]["type"] = "integer"
    first[0].tags.append("mutated")
    second = declarations.tool_schemas()
    assert second[0].payload_schema["properties"]["text"]["type"] == "string"
    assert "mutated" not in second[0].tags
    spec = module("helpdesk.toolsets.tickets.specs").SEARCH_SPEC
    assert spec.payload.schema()["properties"]["text"]["type"] == "string"


def test_toolset_and_fingerprints(sink: Path) -> None:
    declarations = module("helpdesk.toolsets.tickets.declarations")
    full = declarations.toolset()
    assert full.name == "helpdesk.tickets"
    assert (full.description, full.tags) == ("Support tickets.", ["support"])
    assert [t.name for t in full.tools] == [
        "tickets.search", "tickets.more", "tickets.get", "tickets.refund", "tickets.ping",
        "tickets.open_folder",
    ]  # fmt: skip
    bare = ToolsetDeclaration(name="helpdesk.tickets", tools=declarations.tool_schemas())
    assert declarations.schema_fingerprint() == declarations.SCHEMA_FINGERPRINT
    assert fingerprint(bare) == declarations.SCHEMA_FINGERPRINT
    assert fingerprint(full) != declarations.SCHEMA_FINGERPRINT  # annotations count there
    renamed = declarations.schema_fingerprint("other.tickets")
    assert renamed == fingerprint(ToolsetDeclaration(name="other.tickets", tools=bare.tools))
    assert renamed != declarations.SCHEMA_FINGERPRINT


def test_consumer_contracts(sink: Path) -> None:
    schemas = {t.name: t for t in module("helpdesk.toolsets.tickets.declarations").tool_schemas()}
    search = schemas["tickets.search"].consumer_contract
    more = schemas["tickets.more"].consumer_contract
    refund = schemas["tickets.refund"].consumer_contract
    get = schemas["tickets.get"].consumer_contract
    assert search and more and refund and get
    assert search.bounds and search.bounds.paging
    assert search.bounds.paging.continue_tool == "tickets.more"
    assert more.bounds and more.bounds.paging and more.bounds.paging.source_tool == "tickets.search"
    assert refund.required_labels == ["tenant"]
    assert refund.confirmation and refund.confirmation.title == "Approve refund"
    assert [d.kind for d in get.server_data] == ["trace"]
    assert get.server_data[0].audience == "internal"
    assert schemas["tickets.ping"].result_schema["type"] == "null"
    ask = module("helpdesk.toolsets.ask_expert.declarations").tool_schemas()[0]
    assert ask.consumer_contract and ask.consumer_contract.kind == "agent"
    assert ask.consumer_contract.agent and ask.consumer_contract.agent.executor == "helpdesk.expert"


def test_codecs_validate_and_name_fields(sink: Path) -> None:
    spec = module("helpdesk.toolsets.tickets.specs").REFUND_SPEC
    refund = spec.payload.codec.decode('{"order": "o1", "amount": 5}')
    assert (refund.order, refund.amount) == ("o1", 5)
    with pytest.raises(PayloadError) as caught:
        spec.payload.codec.decode('{"order": "o1", "amount": 0}')
    assert "amount" in str(caught.value) and "tickets.refund payload" in str(caught.value)
    assert spec.result.codec.encode(None) == "null"
    forecast = module("helpdesk.toolsets.weather.specs").GET_FORECAST_SPEC
    assert forecast.payload.codec.decode({"city": "Paris"}) == {"city": "Paris"}
    with pytest.raises(PayloadError, match="city"):
        forecast.payload.codec.decode({})


def test_agent_definitions_and_deferred_lists(sink: Path) -> None:
    triage = module("helpdesk.agents.triage")
    definition = triage.definition()
    assert definition.id == triage.AGENT_ID == "helpdesk.triage"
    assert triage.DEFERRED_TOOL_IDS == (
        "notes.add_note", "tickets.get", "tickets.search", "weather.get-forecast",
    )  # fmt: skip
    assert definition.deferred_tool_ids == triage.DEFERRED_TOOL_IDS
    assert definition.policy.max_tool_calls == 12
    assert definition.policy.model_timeout == 90.0
    assert [(c.allowed_any, c.denied_any) for c in definition.policy.tag_clauses] == [
        (("support", "read"), ()), ((), ("admin",)),
    ]  # fmt: skip
    assert definition.required_labels == ("tenant",)
    assert definition.agent_executors == ("helpdesk.expert",)
    assert {s.id for s in definition.specs} >= {"ask_expert.ask", "tickets.refund"}
    reporter = module("reporting.agents.reporter").definition()
    assert [s.id for s in reporter.specs] == ["tickets.search", "tickets.more"]
    assert reporter.deferred_tool_ids == ()


def test_agent_module_docstrings_mention_registries_only_for_registry_consumers(
    sink: Path,
) -> None:
    reads = "registry\nsources are read by each planning activity"
    triage = module("helpdesk.agents.triage.agent").__doc__ or ""
    reporter = module("reporting.agents.reporter.agent").__doc__ or ""
    assert reads in triage
    assert "registr" not in reporter.lower()
    assert "take no catalog and do no I/O." in reporter


def test_a_service_description_is_its_package_docstring(sink: Path) -> None:
    # Description("The help desk.") in the helpdesk Service body was accepted and dropped.
    helpdesk = module("helpdesk").__doc__ or ""
    reporting = module("reporting").__doc__ or ""
    assert helpdesk.strip() == "Generated packages of service 'helpdesk'.\n\nThe help desk."
    assert reporting == "Generated packages of service 'reporting'."


class FakeCatalog:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def run_labels(self) -> dict[str, str]:
        return {}

    async def include_toolset(
        self, registry: str, name: str, version: str = "", deferred: bool = False
    ) -> None:
        self.calls.append(("toolset", registry, name, version, deferred))

    async def include_registry(self, registry: str, deferred: bool = False) -> None:
        self.calls.append(("registry", registry, deferred))


async def test_registry_tools_read_exactly_the_declared_sources(sink: Path) -> None:
    triage_tools = module("helpdesk.agents.triage").definition().registry_tools
    everything = module("reporting.agents.everything").definition().registry_tools
    catalog = FakeCatalog()
    await triage_tools.resolve(catalog)
    await everything.resolve(catalog)
    assert catalog.calls == [
        ("toolset", "company", "records", "1.2.3", True),
        ("registry", "company", False),
    ]
    assert triage_tools.allows("company", "records", "1.2.3")
    assert not triage_tools.allows("company", "records", "1.2.4")
    assert not triage_tools.allows("company", "other", "1.2.3")
    assert not triage_tools.allows("elsewhere", "records", "1.2.3")
    assert everything.allows("company", "anything", "9")
    assert not everything.allows("elsewhere", "anything", "9")


def test_tool_schemas_json(sink: Path) -> None:
    document = json.loads((sink / "helpdesk/agents/triage/tool_schemas.json").read_text())
    assert document["agent"] == "helpdesk.triage"
    assert [t["id"] for t in document["tools"]][:2] == ["tickets.search", "tickets.more"]
    refund = next(t for t in document["tools"] if t["id"] == "tickets.refund")
    assert refund["confirmation"]["title"] == "Approve refund"
    assert refund["result"] == {
        "name": None,
        "schema": {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "null"},
    }
    text = (sink / "helpdesk/agents/triage/tool_schemas.json").read_text()
    assert text.endswith("}\n") and '\n  "tools": [' in text
    assert not (sink / "helpdesk/agents/everything/tool_schemas.json").exists()


def test_generated_code_never_imports_the_design(sink: Path) -> None:
    for path in sink.rglob("*.py"):
        text = path.read_text()
        assert "kitchen_sink" not in text.replace("from kitchen_sink.py", "")
        assert "agentgen.dsl" not in text and "agentgen.codegen" not in text


def test_registry_settings_and_publish_targets(sink: Path) -> None:
    registries = module("registries")
    assert list(registries.REGISTRIES) == ["company", "archive"]
    company = registries.REGISTRIES["company"]
    assert company == registries.RegistrySettings(
        name="company",
        url="https://registry.example",
        api_version="v2",
        description="The company's tool catalog.",
        timeout=90.0,
        sync_interval=60.0,
        cache_ttl=300.0,
        retry=registries.RetrySettings(max_retries=3, backoff_base=0.25, backoff_max=10.0),
    )
    archive = registries.REGISTRIES["archive"]
    assert (archive.url, archive.api_version, archive.timeout, archive.retry) == (
        "grpcs://archive.example:8443", "v1", None, None,
    )  # fmt: skip
    with pytest.raises(TypeError):
        registries.REGISTRIES["other"] = archive  # read-only
    assert module("helpdesk.toolsets.tickets.declarations").PUBLISH_TO == ("company", "archive")
    assert module("helpdesk.toolsets.notes.declarations").PUBLISH_TO == ()
