"""Generated names never collide: tool constants, type classes, executor classes, provider names.

``tests/designs/collisions.py`` uses names that generated modules define or import; it must
generate code that imports and passes mypy --strict, black and ruff. Collisions no renaming can
avoid are design errors naming both parties.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from agentgen.codegen.builders.names import tool_constant
from agentgen.codegen.pipeline import check_file
from agentgen.dsl.errors import DesignError
from tests.codegen.helpers import ROOT, generate_design, run_tool
from tests.conftest import DesignRunner

COLLISIONS = ROOT / "tests" / "designs" / "collisions.py"
JSON_SCHEMA = "https://json-schema.org/draft/2020-12/schema"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    base = tmp_path_factory.mktemp("collisions")
    generate_design(COLLISIONS, base / "collisions_gen")
    sys.path.insert(0, str(base))
    try:
        yield base / "collisions_gen"
    finally:
        sys.path.remove(str(base))
        for name in [m for m in sys.modules if m.split(".")[0] == "collisions_gen"]:
            del sys.modules[name]


def module(name: str) -> ModuleType:
    return importlib.import_module(f"collisions_gen.svc.{name}")


def test_generated_code_passes_mypy_strict_black_and_ruff(generated: Path) -> None:
    done = run_tool("mypy", "--strict", "--no-incremental", str(generated), cwd=generated.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    done = run_tool("black", "--check", "--quiet", str(generated), cwd=generated.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    done = run_tool(
        "ruff", "check", "--isolated", "--select", "E,F,I,UP,B,SIM,RUF", "--ignore", "E501",
        str(generated), cwd=generated.parent,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_module_imports(generated: Path) -> None:
    for path in sorted(generated.rglob("*.py")):
        parts = path.relative_to(generated.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        importlib.import_module(name)


def test_tool_constants_do_not_take_module_names(generated: Path) -> None:
    specs = module("toolsets.tools.specs")
    assert specs.TOOLSET == "svc.tools"
    assert specs.DESCRIPTION is None and specs.TAGS == ()
    assert specs.TOOLSET_TOOL == "tools.toolset"
    assert specs.TOOLSET_TOOL_SPEC.id == "tools.toolset"
    assert specs.DESCRIPTION_TOOL == "tools.description"
    assert specs.SPECS_TOOL == "tools.specs" and specs.NAMES_TOOL == "tools.names"
    assert specs.SPEC_TOOL == "tools.spec" and specs.AGENT_ID_TOOL == "tools.agent_id"
    assert specs.X == "tools.x" and specs.X_SPEC.id == "tools.x"
    assert specs.X_SPEC_TOOL == "tools.x_spec" and specs.X_SPEC_TOOL_SPEC.id == "tools.x_spec"
    assert specs.X_TOOL_TOOL == "tools.x_tool"
    assert specs.X_SPEC_TOOL_TOOL == "tools.x_spec_tool"
    assert specs.TOOLSET_TOOL_TOOL == "tools.toolset_tool"
    assert len(specs.SPECS) == len({s.id for s in specs.SPECS}) == 15
    assert specs.names()[0] == "tools.toolset"
    assert specs.spec("tools.types").id == "tools.types"


def test_tool_constant_rule_is_injective() -> None:
    names = [
        "toolset", "toolset_tool", "toolset_tool_tool", "x", "x_spec", "x_tool", "x_spec_tool",
        "x_tool_spec", "spec", "spec_tool", "specs", "names", "tool", "mcp_tool_names",
        "mcp_declaration",
    ]  # fmt: skip
    constants = [tool_constant(n) for n in names]
    taken = {*constants, *(f"{c}_SPEC" for c in constants)}
    assert len(taken) == 2 * len(names)
    assert not taken & {
        "TOOLSET", "DESCRIPTION", "TAGS", "AGENT_ID", "SPECS", "MCP_TOOL_NAMES", "MCP_DECLARATION",
    }  # fmt: skip


def test_type_classes_do_not_shadow_imports(generated: Path) -> None:
    types = module("toolsets.tools.types")
    text = (generated / "svc/toolsets/tools/types.py").read_text()
    for name in ("Field", "Any", "Annotated", "Literal", "BaseModel", "ConfigDict", "list"):
        # Renamed, with the design's class name kept as the schema title and (through its
        # qualname) as its $defs name.
        assert (
            f'\nclass {name}2(BaseModel):\n    __qualname__ = "{name}"\n'
            f'    model_config = ConfigDict(title="{name}")'
        ) in text
    for name in ("dict", "str", "int", "float", "bool"):
        assert f"\nclass {name}2(BaseModel):" in text
    # Modules are imported under private aliases: classes named like them keep their names.
    for name in ("uuid", "datetime", "decimal", "enum", "pydantic", "typing"):
        assert f"\nclass {name}(BaseModel):" in text
        assert getattr(types, name).model_json_schema()["title"] == name
    # The design's class "HttpUrl" keeps its name; pydantic's type is then written qualified.
    assert "\nclass HttpUrl(BaseModel):" in text
    assert "home: _pydantic.HttpUrl | None = None" in text
    assert "\nimport pydantic as _pydantic\n" in text
    assert types.Field2.model_json_schema()["title"] == "Field"
    everything = module("toolsets.tools.specs").EVERYTHING_SPEC
    value = everything.payload.codec.decode(
        json.dumps(
            {
                "when": "2024-01-02T03:04:05Z",
                "id": "12345678-1234-5678-1234-567812345678",
                "label": "x",
                "home": "https://example.com",
                "own_url": {"href": "h"},
                "shadow_0": {"value": 3},
            }
        )
    )
    assert isinstance(value, types.Everything)
    assert value.shadow_0 == types.Field2(value=3)
    assert value.own_url == types.HttpUrl(href="h")
    # A tool method named "types" does not shadow the module in the executor protocol.
    executor = (generated / "svc/toolsets/tools/executor.py").read_text()
    assert "from . import types as _types" in executor
    assert "args: _types.Everything" in executor


def test_fields_do_not_shadow_what_other_fields_use(generated: Path) -> None:
    # A field's name is bound in its class's namespace, where pydantic resolves the
    # annotations and defaults of all fields: ``uuid: uuid.UUID`` would make every
    # ``uuid.UUID`` of the class mean the field's default.
    text = (generated / "svc/toolsets/tools/types.py").read_text()
    for name in ("builtins", "datetime", "decimal", "enum", "typing", "uuid"):
        assert f"\nimport {name} as _{name}\n" in text
    body = text.split("\nclass Everything(BaseModel):", 1)[1]
    for line in (
        "uuid: _uuid.UUID | None = None",
        "datetime: _datetime.datetime | None = None",
        "decimal: _decimal.Decimal | None = None",
        "when: _datetime.datetime",
        "Field: _builtins.int = _pydantic.Field(1, ge=0)",
        "ratio: float = _pydantic.Field(0.5, ge=0)",
        "Any: _typing.Any = None",
        "anything: _typing.Any = None",
        'kind: _typing.Literal["a", "b"] = "a"',
        # Classes the fields shadow are referred to through a private alias.
        "level: _Level = _Level.ONE",
        "Level: _Level = _Level.TWO",
        "own_url: _HttpUrl | None = None",
        "shadow_7: _uuid2 | None = None",
        "Tree: _Tree | None = None",
    ):
        assert f"\n    {line}\n" in body, line
    assert "\n_Level = Level\n" in text and "\n_uuid2 = uuid\n" in text
    # A class refers to itself through its alias too (bound after it, so rebuilt at the end).
    assert "\nclass Tree(BaseModel):\n    Tree: _Tree | None\n" in text
    assert "\n_Tree = Tree\n" in text and text.endswith("\nTree.model_rebuild()\n")
    # Names no field of the class shadows stay plain there.
    field2 = (
        '\nclass Field2(BaseModel):\n    __qualname__ = "Field"\n'
        '    model_config = ConfigDict(title="Field")\n'
    )
    assert field2 + "    value: int = 0\n" in text
    types = module("toolsets.tools.types")
    value = types.Everything.model_validate(
        {
            "when": "2024-01-02T03:04:05Z",
            "id": "12345678-1234-5678-1234-567812345678",
            "label": "x",
            "uuid": "12345678-1234-5678-1234-567812345678",
            "datetime": "2024-01-02T03:04:05Z",
            "decimal": "1.5",
            "Field": 2,
            "Any": {"a": 1},
            "Level": 1,
            "Tree": {"Tree": {"Tree": None}},
            "int": 3,
            "list": [1, 2],
        }
    )
    assert str(value.uuid) == "12345678-1234-5678-1234-567812345678"
    assert value.datetime is not None and value.datetime.year == 2024
    assert str(value.decimal) == "1.5"
    assert (value.Field, value.Any, value.int, value.list) == (2, {"a": 1}, 3, [1, 2])
    assert value.Level is types.Level.ONE and value.level is types.Level.ONE
    assert value.Tree == types.Tree(Tree=types.Tree(Tree=None))
    assert types.Everything.model_fields["Field"].metadata[0].ge == 0
    assert types.Everything.model_fields["ratio"].default == 0.5
    with pytest.raises(ValueError):
        types.Everything.model_validate({**value.model_dump(), "Field": -1})


def test_toolsets_that_camel_case_alike_in_different_agents(generated: Path) -> None:
    assert module("toolsets.a_1.executor").A1Executor is not None
    assert module("toolsets.a1.executor").A1Executor is not None


def test_agent_tool_without_return_answers_with_text(generated: Path) -> None:
    specs = module("toolsets.ask_expert.specs")
    assert json.loads(specs.ASK_SPEC.result.schema_json) == {
        "$schema": JSON_SCHEMA,
        "type": "string",
    }
    assert specs.ASK_SPEC.result.codec.decode('"the answer"') == "the answer"
    declaration = module("toolsets.ask_expert.declarations").tool_schemas()[0]
    assert declaration.result_schema == {"$schema": JSON_SCHEMA, "type": "string"}
    document = json.loads((generated / "svc/agents/asker/tool_schemas.json").read_text())
    assert document["tools"][0]["result"]["schema"]["type"] == "string"


def build_errors(designs: DesignRunner, source: str) -> list[DesignError]:
    errors = list(check_file(designs.write(source)).errors)
    assert errors, "the design validated, errors were expected"
    return errors


def test_executor_classes_that_collide_within_an_agent(designs: DesignRunner) -> None:
    errors = build_errors(
        designs,
        """
A_1 = Toolset("a_1", lambda: Tool("one", "One."))
A1 = Toolset("a1", lambda: Tool("one", "One, again."))
with Service("svc"):
    with Agent("both", "Uses both."):
        Use(A_1)
        Use(A1)
""",
    )
    (error,) = errors
    assert error.loc.line == 8
    assert str(error).endswith(
        'service "svc" › agent "both" › Use(a1): toolsets "a_1" and "a1" both generate the '
        'executor class A1Executor, which the config of agent "svc.both" imports together; '
        "rename one of the toolsets"
    )


def test_provider_name_collisions_within_an_agent(designs: DesignRunner) -> None:
    errors = build_errors(
        designs,
        """
AB = Toolset("a_b", lambda: Tool("c", "C."))
A = Toolset("a", lambda: Tool("b_c", "B C."))
with Service("svc"):
    with Agent("both", "Uses both."):
        Use(AB)
        Use(A)
    Agent("one", "Only one of them: fine.", lambda: Use(AB))
""",
    )
    (error,) = errors
    assert error.loc.line == 8
    assert (
        'tools "a_b.c" and "a.b_c" of agent "svc.both" are both sent to models as "a_b_c"'
        in str(error)
    )
    assert "rename one of the tools or toolsets" in str(error)


def test_service_named_like_the_registries_module(designs: DesignRunner) -> None:
    errors = build_errors(
        designs,
        """
Company = Registry("company", lambda: URL("https://registry.example"))
Service("registries", lambda: Agent("a", "A.", lambda: Use(Company)))
""",
    )
    (error,) = errors
    assert 'service name "registries" is taken by the generated module registries.py' in str(error)
