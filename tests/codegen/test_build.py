"""Decisions the generator takes from a valid design: toolset owners, checked JSON Schemas."""

from __future__ import annotations

import pytest

from agentgen.codegen.generation_model import GenerationModel
from agentgen.codegen.pipeline import check_file, model_of
from agentgen.dsl.errors import DesignError
from agentgen.runtime.contracts.limits import MAX_SCHEMA_DEPTH
from tests.conftest import DesignRunner


def generation(designs: DesignRunner, source: str) -> GenerationModel:
    return model_of(designs.write(source))


def build_errors(designs: DesignRunner, source: str) -> list[DesignError]:
    errors = list(check_file(designs.write(source)).errors)
    assert errors, "the design validated, errors were expected"
    return errors


def owners(model: GenerationModel) -> dict[str, str]:
    return {t.name: s.name for s in model.services for t in s.toolsets}


EXPORTER = """
with Service("exporter"):
    Export(Records)
"""
USER = """
with Service("user"):
    Agent("a", "Uses records.", lambda: Use(Records))
"""
RECORDS = """
Records = Toolset("records", lambda: Tool("lookup", "Look up."))
Other = Toolset("other", lambda: Tool("lookup", "Look up."))
"""


@pytest.mark.parametrize("services", [EXPORTER + USER, USER + EXPORTER])
def test_the_exporting_service_owns_a_toolset_whatever_the_order(
    designs: DesignRunner, services: str
) -> None:
    model = generation(designs, RECORDS + services)
    assert owners(model) == {"records": "exporter"}
    (user,) = [s for s in model.services if s.name == "user"]
    (used,) = user.agents[0].uses
    assert used.toolset.registration_name == "exporter.records"
    assert used.import_path == "....exporter.toolsets.records"


def test_owners_without_an_export_follow_the_first_user_and_the_definer(
    designs: DesignRunner,
) -> None:
    model = generation(
        designs,
        RECORDS
        + """
with Service("first"):
    Agent("a", "A.", lambda: Use(Records))
with Service("second"):
    Agent("b", "B.", lambda: (Use(Records), Use(Other)))
    Agent("c", "C.", lambda: Export("asked", lambda: Tool("ask", "Ask C.")))
with Service("third"):
    Agent("d", "D.", lambda: Use(Other))
""",
    )
    assert owners(model) == {"records": "first", "other": "second", "asked": "second"}


MCP = """
def tools():
    Tool("fine", "A valid schema.", lambda: Args({{"type": "object", "properties": {{}}}}))
    Tool("broken", "The schema.", lambda: {call})
Weather = Toolset("weather", FromExternalMCP("srv", "weather"), tools)
Service("svc", lambda: Agent("a", "A.", lambda: Use(Weather)))
"""


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            'Args({"type": "objekt"})',
            "Args JSON Schema is not a valid JSON Schema (2020-12): 'objekt' is not valid under "
            "any of the given schemas (at /type)",
        ),
        (
            'Args({"type": "object", "properties": {"x": {"enum": {1, 2}}}})',
            "Args JSON Schema is not JSON: the value at /properties/x/enum is a set (JSON has "
            "objects with string keys, lists, strings, numbers, booleans and null)",
        ),
        (
            'Return({"type": "object", 1: "x"})',
            "Return JSON Schema is not JSON: the key 1 is a int, not a string",
        ),
        (
            'Args({"type": "string"})',
            'Args JSON Schema must describe an object ("type": "object"): tool arguments are a '
            "JSON object",
        ),
        (
            'Return({"$ref": "https://schemas.example/x.json"})',
            'Return JSON Schema refers to "https://schemas.example/x.json" (at /$ref), outside '
            'the schema: references must be local ("#/$defs/...") since nothing is fetched',
        ),
        (
            'Return({"$ref": "#/$defs/Missing"})',
            'Return JSON Schema refers to "#/$defs/Missing" (at /$ref), which the schema does '
            "not define",
        ),
        (
            'Return({"$schema": "http://json-schema.org/draft-07/schema#", "type": "string"})',
            'Return JSON Schema declares $schema "http://json-schema.org/draft-07/schema#"; '
            "tool contracts are JSON Schema 2020-12",
        ),
        (
            'Return({"type": "number", "maximum": float("inf")})',
            "Return JSON Schema is not JSON: the number inf at /maximum is not finite",
        ),
        # What the generated package's import refuses (the runtime's schema inspection).
        (
            'Return({"$ref": "#"})',
            "Return JSON Schema cannot be a tool contract: $ref cycle / → / never descends "
            "into the value",
        ),
        (
            'Args({"type": "object", "properties": {"pw": {"type": "string", '
            '"pattern": "^(?=.*[0-9]).{8,}$"}}})',
            "Args JSON Schema cannot be a tool contract: pattern '^(?=.*[0-9]).{8,}$' at "
            "/properties/pw/pattern cannot run on RE2",
        ),
        (
            'Args({"type": "object", "patternProperties": {"^(?!x)": {"type": "string"}}})',
            "Args JSON Schema cannot be a tool contract: patternProperties key '^(?!x)' at "
            "/patternProperties cannot run on RE2",
        ),
    ],
)
def test_mcp_json_schemas_are_checked(designs: DesignRunner, call: str, message: str) -> None:
    (error,) = build_errors(designs, MCP.format(call=call))
    assert error.loc.line == 5
    assert error.where == 'toolset "weather" › tool "broken"'
    assert message in error.message


@pytest.mark.parametrize("levels", [40, 1000])
def test_mcp_json_schemas_nested_past_the_runtime_limit(designs: DesignRunner, levels: int) -> None:
    """Deeper than the runtime's MAX_SCHEMA_DEPTH is a design error, however deep (1,000
    levels once exhausted Python's recursion in the check itself: a crash of agentgen)."""
    source = f"""
DEEP = {{"type": "object", "properties": {{}}}}
level = DEEP
for index in range({levels}):
    level["properties"][f"p{{index}}"] = level = {{"type": "object", "properties": {{}}}}
Deep = Toolset("deep", FromExternalMCP("srv", "deep"), lambda: Tool("t", "T.", lambda: Args(DEEP)))
Service("svc", lambda: Agent("a", "A.", lambda: Use(Deep)))
"""
    (error,) = build_errors(designs, source)
    assert error.loc.line == 7
    assert (
        f"Args JSON Schema cannot be a tool contract: the schema is nested deeper than "
        f"{MAX_SCHEMA_DEPTH} levels"
    ) in error.message


def test_valid_mcp_json_schemas_with_local_references(designs: DesignRunner) -> None:
    schema = (
        '{"type": "object", "properties": {"p": {"$ref": "#/$defs/P"}}, '
        '"$defs": {"P": {"type": "string"}}}'
    )
    model = generation(designs, MCP.format(call=f"(Args({schema}), Return({schema}))"))
    (toolset,) = model.services[0].toolsets
    assert [t.payload.kind for t in toolset.tools] == ["schema", "schema"]


def test_agent_names_ending_in_agent_get_no_doubled_suffix(designs: DesignRunner) -> None:
    model = generation(
        designs,
        RECORDS
        + """
with Service("svc"):
    Agent("billing_agent", "Bills.", lambda: Use(Records))
    Agent("agent", "Plain.", lambda: Use(Records))
    Agent("agents_desk", "Not a suffix.", lambda: Use(Records))
    Agent("billing", "Bills too.", lambda: Use(Records))
""",
    )
    names = {a.name: (a.config_class, a.register_function) for a in model.services[0].agents}
    assert names == {
        "billing_agent": ("BillingAgentConfig", "register_billing_agent"),
        "agent": ("AgentConfig", "register_agent"),
        "agents_desk": ("AgentsDeskAgentConfig", "register_agents_desk_agent"),
        "billing": ("BillingAgentConfig", "register_billing_agent"),
    }


PUBLISHED = """
from pydantic import BaseModel, Field


class Args_(BaseModel):
    code: str = Field(pattern=r"^\\u{{7F}}$")


Company = Registry("company", lambda: URL("http://127.0.0.1:9090"))


def directory() -> None:
    Tool("find", "Find.", lambda: Args(Args_))  # args here
    {publish}


Directory = Toolset("directory", directory)
Service("hr", lambda: Export(Directory))
"""


def test_a_published_models_schema_is_checked_as_its_consumers_compile_it(
    designs: DesignRunner,
) -> None:
    """pydantic reads ``\\u{7F}`` (its engine is not RE2): the toolset would be refused by
    every consumer when it registers, so the generator says so at the Args line."""
    (error,) = build_errors(designs, PUBLISHED.format(publish="PublishTo(Company)"))
    assert error.where == 'toolset "directory" › tool "find"'
    assert error.loc.line == 14
    assert "Args model Args_: its JSON Schema cannot be published to registry" in error.message
    assert '"company"' in error.message and "cannot run on RE2" in error.message
    # Not published: the pattern only ever runs in pydantic, which reads it.
    assert not check_file(designs.write(PUBLISHED.format(publish="pass"))).errors
