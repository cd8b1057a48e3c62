"""SPEC A: vocabulary, body forms, scope errors and per-load isolation."""

from __future__ import annotations

import re
import threading

import pytest

from agentgen import dsl
from agentgen.dsl.dump import dump
from agentgen.dsl.eval import NoDesignContextError
from tests.conftest import DesignRunner

VOCABULARY = [
    "Service", "Agent", "Toolset", "Tool", "Args", "Return", "Title", "Description", "Tags",
    "Use", "Export", "Deferred", "Registry", "URL", "Version", "FromRegistry", "PublishTo",
    "FromExternalMCP", "Confirmation", "BoundedResult", "Cursor", "NextCursor", "ContinueWith",
    "ServerData", "RunPolicy", "ModelTimeout", "MCPName",
]  # fmt: skip


@pytest.mark.parametrize("name", VOCABULARY)
def test_a1_vocabulary_is_importable(name: str) -> None:
    assert callable(getattr(dsl, name))
    assert name in dsl.__all__


CALLABLE_FORM = """
from pydantic import BaseModel
class Q(BaseModel):
    q: str
    cursor: str | None = None
class Page(BaseModel):
    ids: list[str]
    next_cursor: str | None = None

Company = Registry("company", lambda: (URL("https://registry.example"), Timeout(5)))
CompanyRecords = Toolset("company_records", FromRegistry(Company, "records"))

def records():
    Description("Records of the company.")
    Tags("records")
    Tool("lookup", "Look up a record.", lambda: (Args(Q), Return(Page), Tags("read")))
    def search():
        Args(Q)
        Return(Page)
        Title("Find Records")
        BoundedResult(lambda: (Cursor("cursor"), NextCursor("next_cursor")))
        Confirmation(lambda: (PromptTemplate("Search {{ q }}?"), DeniedResultTemplate("No.")))
    Tool("search", "Search records.", search)
    PublishTo(Company)
Records = Toolset("records", records)

def assistant():
    Use(Records, lambda: Deferred("search"))
    Use(CompanyRecords, lambda: (Deferred(), Version("1.2.3")))
    Use("helpers", lambda: Tool("answer", "Answer a question."))
    Export("ask", lambda: Tool("ask", "Ask the assistant."))
    RunPolicy(lambda: (MaxToolCalls(5), AllowTags("read"), DenyTags("admin")))

Service("svc", lambda: (Description("A service."), Agent("assistant", "Helps.", assistant),
                        Export(Records)))
"""

WITH_FORM = """
from pydantic import BaseModel
class Q(BaseModel):
    q: str
    cursor: str | None = None
class Page(BaseModel):
    ids: list[str]
    next_cursor: str | None = None

with Registry("company") as Company:
    URL("https://registry.example")
    Timeout(5)
CompanyRecords = Toolset("company_records", FromRegistry(Company, "records"))

with Toolset("records") as Records:
    Description("Records of the company.")
    Tags("records")
    with Tool("lookup", "Look up a record."):
        Args(Q)
        Return(Page)
        Tags("read")
    with Tool("search", "Search records."):
        Args(Q)
        Return(Page)
        Title("Find Records")
        with BoundedResult():
            Cursor("cursor")
            NextCursor("next_cursor")
        with Confirmation():
            PromptTemplate("Search {{ q }}?")
            DeniedResultTemplate("No.")
    PublishTo(Company)

with Service("svc"):
    Description("A service.")
    with Agent("assistant", "Helps."):
        with Use(Records):
            Deferred("search")
        with Use(CompanyRecords):
            Deferred()
            Version("1.2.3")
        with Use("helpers"):
            Tool("answer", "Answer a question.")
        with Export("ask"):
            Tool("ask", "Ask the assistant.")
        with RunPolicy():
            MaxToolCalls(5)
            AllowTags("read")
            DenyTags("admin")
    Export(Records)
"""


def test_a2_callable_and_with_bodies_build_the_same_tree(designs: DesignRunner) -> None:
    callable_tree = dump(designs.load(CALLABLE_FORM))
    with_tree = dump(designs.load(WITH_FORM))
    assert callable_tree == with_tree
    # The comparison is not vacuous: the tree holds what both forms declared.
    (service,) = with_tree["services"]
    (agent,) = service["agents"]
    assert [u["target"] for u in agent["uses"]] == [
        'toolset "records"',
        'toolset "company_records"',
        'toolset "helpers"',
    ]
    assert agent["policy"]["max_tool_calls"] == 5


def test_a2_named_function_body(designs: DesignRunner) -> None:
    root = designs.load(
        """
def records():
    Tool("lookup", "Look up a record.")
Records = Toolset("records", records)
def reader():
    Use(Records, Deferred)
def service():
    Agent("reader", "Reads.", reader)
Service("svc", service)
"""
    )
    assert root.agents()[0].uses[0].resolved_deferred == ["lookup"]


def test_a2_more_than_one_body_is_an_error(designs: DesignRunner) -> None:
    designs.check(
        """
def one():
    Tool("a", "A tool.")
def two():
    Tool("b", "B tool.")
Records = Toolset("records", one, two)  # <-
with Toolset("other", lambda: Tool("c", "C tool.")):  # <-
    Tool("d", "D tool.")
""",
        "Toolset accepts at most one body",
        "Toolset accepts at most one body: it already has one (line 8)",
    )


def test_a2_body_must_take_no_arguments(designs: DesignRunner) -> None:
    designs.check(
        """
Records = Toolset("records", lambda x: Tool("a", "A tool."))  # <-
""",
        "Toolset body must be callable with no arguments",
    )


def test_a2_a_body_called_at_once_is_answered_with_how_to_pass_it(designs: DesignRunner) -> None:
    designs.check(
        """
def tools():
    Tool("c", "C tool.")  # <-
Other = Toolset("other", tools())  # <-
Records = Toolset("records", lambda: Tool("a", "A tool."))
with Service("svc"):
    Agent("a", "A.", Use(Records))  # <- <-
    with Agent("b", "B."):
        Use(Records, Deferred("a"))  # <- <-
""",
        "Tool is not valid at the top level of the design",
        "Toolset takes a name, a source (FromRegistry/FromExternalMCP) and a body; got NoneType: "
        "None, what a call returned before Toolset ran; pass a body for Toolset to run: a "
        "lambda, or a function itself (body, not body())",
        # Not "toolset declares no tools" too: that only repeats the body's mistake.
        # Both under the Use(...) that ran too soon, in the order they were found.
        'Use is not valid inside service "svc"',
        "Agent takes a name, a description and an optional body; got 1 extra argument(s): the "
        "result of Use(...), which ran before Agent did; pass a body for Agent to run: "
        "lambda: Use(...)",
        'Deferred is not valid inside agent "b"',
        "Use takes a toolset, registry or name, and an optional body; got 1 extra argument(s): "
        "None, what a call returned before Use ran; pass a body for Use to run: a lambda, or a "
        "function itself (body, not body())",
    )


def test_a3_a_service_description_given_as_an_argument_goes_in_the_body(
    designs: DesignRunner,
) -> None:
    designs.check(
        """
with Service("svc", "Support."):  # <-
    Agent("a", "A.", lambda: Use("t", lambda: Tool("x", "X.")))
""",
        "Service takes a name and an optional body; a service's description goes in its body: "
        'Service("svc", lambda: Description("Support."))',
    )


def test_a3_wrong_scope_names_function_and_scope(designs: DesignRunner) -> None:
    designs.check(
        """
Tool("orphan", "No toolset.")  # <-
Agent("loose", "No service.")  # <-
with Toolset("records"):
    Tool("lookup", "Look up.", lambda: Use("x"))  # <-
    URL("https://nowhere.example")  # <-
    Registry("inner")  # <-
with Service("svc"):
    Toolset("nested", lambda: Tool("a", "A tool."))  # <-
    with Agent("a", "Agent."):
        Args(dict)  # <-
        MaxToolCalls(3)  # <-
""",
        "Tool is not valid at the top level of the design; it belongs inside a Toolset, Use or "
        "Export body",
        "Agent is not valid at the top level of the design; it belongs inside a Service body",
        'Use is not valid inside tool "lookup"; it belongs inside an Agent body',
        'URL is not valid inside toolset "records"; it belongs inside a Registry body',
        'Registry is not valid inside toolset "records"; it belongs at the top level',
        'Toolset is not valid inside service "svc"; it belongs at the top level of the design',
        'Args is not valid inside agent "a"; it belongs inside a Tool body',
        'MaxToolCalls is not valid inside agent "a"; it belongs inside a RunPolicy body',
    )


def test_a3_wrong_argument_types_are_design_errors(designs: DesignRunner) -> None:
    designs.check(
        """
from pydantic import BaseModel
class M(BaseModel):
    x: int
with Toolset("records"):
    with Tool("a", 42):  # <-
        Args(int)  # <-
        Return({"type": "object"})  # <-
    with Tool("b", "B."):
        Args(M)
        Args(M)  # <-
with Service("svc"):
    Agent("x", "X.", lambda: Use(None))  # <-
    Agent("y", "Y.", lambda: Use(3.5))  # <-
""",
        "Tool description must be a string, got int",
        "Args takes a pydantic model class (a BaseModel subclass), got int",
        "JSON Schema dicts are only accepted for tools of FromExternalMCP toolsets",
        'Args is already set for tool "b" (line 11); keep one',
        "Use requires a toolset or a registry, got None",
        "Use takes a Toolset(...) or Registry(...) expression",
    )


def test_a4_types_are_pydantic_models_or_mcp_schemas(designs: DesignRunner) -> None:
    root = designs.load(
        """
from pydantic import BaseModel
class A(BaseModel):
    x: int
Local = Toolset("local", lambda: Tool("t", "T.", lambda: (Args(A), Return(A))))
def weather():
    Tool("forecast", "Forecast.", lambda: Args({"type": "object", "properties": {}}))
Weather = Toolset("weather", FromExternalMCP("weather_server", "weather"), weather)
Plain = Toolset("plain", lambda: Tool("ping", "No args, no result."))
"""
    )
    local, weather, plain = root.toolsets
    assert local.tools[0].args is not None and local.tools[0].args.value.__name__ == "A"
    assert weather.tools[0].args is not None and weather.tools[0].args.value["type"] == "object"
    assert plain.tools[0].args is None and plain.tools[0].result is None


def test_a5_loading_twice_gives_independent_trees(designs: DesignRunner) -> None:
    path = designs.write(
        """
Records = Toolset("records", lambda: Tool("lookup", "Look up."))
Service("svc", lambda: Agent("a", "A.", lambda: Use(Records)))
"""
    )
    from agentgen.codegen.loader import load_design

    first, second = load_design(path).root, load_design(path).root
    assert dump(first) == dump(second)
    assert first is not second
    assert first.toolsets[0] is not second.toolsets[0]
    assert first.agents()[0].uses[0].target is first.toolsets[0]
    assert second.agents()[0].uses[0].target is second.toolsets[0]
    assert len(first.toolsets) == len(second.toolsets) == 1


def test_a5_modules_imported_from_the_design_folder_run_again(designs: DesignRunner) -> None:
    (designs.tmp_path / "shared_toolsets.py").write_text(
        "from agentgen.dsl import *\n"
        'Records = Toolset("records", lambda: Tool("lookup", "Look up."))\n'
    )
    path = designs.write(
        """
from shared_toolsets import Records
Service("svc", lambda: Agent("a", "A.", lambda: Use(Records)))
"""
    )
    from agentgen.codegen.loader import load_design

    first, second = load_design(path).root, load_design(path).root
    assert [t.name for t in first.toolsets] == [t.name for t in second.toolsets] == ["records"]
    assert second.agents()[0].uses[0].target is second.toolsets[0]


def test_a5_modules_imported_from_another_folder_run_again(
    designs: DesignRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    lib = designs.tmp_path / "lib"
    (lib / "catalog").mkdir(parents=True)
    (lib / "catalog" / "__init__.py").write_text("")
    (lib / "catalog" / "records.py").write_text(
        "from agentgen.dsl import *\n"
        'Records = Toolset("records", lambda: Tool("lookup", "Look up."))\n'
    )
    monkeypatch.syspath_prepend(str(lib))
    design = designs.tmp_path / "design"
    design.mkdir()
    path = design / "design.py"
    path.write_text(
        "from agentgen.dsl import *\n"
        "from catalog.records import Records\n"
        'Service("svc", lambda: Agent("a", "A.", lambda: Use(Records)))\n'
    )
    from agentgen.codegen.loader import load_design

    first, second = load_design(path).root, load_design(path).root
    assert [t.name for t in first.toolsets] == [t.name for t in second.toolsets] == ["records"]
    assert second.agents()[0].uses[0].target is second.toolsets[0]
    assert first.toolsets[0] is not second.toolsets[0]
    assert "catalog" not in sys.modules and "catalog.records" not in sys.modules
    assert "agentgen.dsl" in sys.modules


def test_a5_installed_modules_that_make_dsl_calls_run_again(
    designs: DesignRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A toolset a pip-installed package declares at import belongs to the tree of the load
    that imported it: two designs generated in one process once shared it, and the second
    generation crashed in the builder."""
    import sys

    from agentgen.codegen import loader
    from agentgen.codegen.pipeline import generate

    site = designs.tmp_path / "site-packages"
    site.mkdir()
    (site / "shared_tools.py").write_text(
        "from agentgen.dsl import Tool, Toolset\n"
        'Shared = Toolset("shared", lambda: Tool("ping", "Ping."))\n'
    )
    monkeypatch.syspath_prepend(str(site))
    installed = loader.is_installation_path
    monkeypatch.setattr(
        loader,
        "is_installation_path",
        lambda path: path.startswith(str(site)) or installed(path),
    )
    trees = []
    for service in ("one", "two"):
        folder = designs.tmp_path / service
        folder.mkdir()
        path = folder / "design.py"
        path.write_text(
            "from shared_tools import Shared\n"
            "from agentgen.dsl import *\n"
            f'Service("{service}", lambda: Agent("a", "A.", lambda: Use(Shared)))\n'
        )
        result = generate(path, folder / "gen", use_cache=False)
        assert not result.errors and f"{service}/toolsets/shared/specs.py" in result.files
        trees.append(loader.load_design(path).root)
        assert "shared_tools" not in sys.modules
    first, second = trees
    assert first.toolsets[0] is not second.toolsets[0]
    assert second.agents()[0].uses[0].target is second.toolsets[0]


def test_a5_a_toolset_of_another_evaluation_is_a_design_error(
    designs: DesignRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module ``evaluate`` imported stays imported (it unloads nothing): a design importing
    it afterwards gets the other tree's expressions, and is told so instead of crashing."""
    import importlib
    import sys

    (designs.tmp_path / "kept_tools.py").write_text(
        "from agentgen.dsl import *\n"
        'Company = Registry("company", lambda: URL("https://registry.example"))\n'
        'Kept = Toolset("kept", lambda: Tool("ping", "Ping."))\n'
    )
    monkeypatch.syspath_prepend(str(designs.tmp_path))
    try:
        dsl.evaluate(lambda: importlib.import_module("kept_tools"))
        designs.check(
            """
from kept_tools import Company, Kept
Mine = Toolset("mine", lambda: (Tool("x", "X."), PublishTo(Company)))  # <-
Remote = Toolset("remote", FromRegistry(Company, "svc.other"))  # <-
with Service("svc"):
    Export(Kept)  # <-
    with Agent("a", "A."):
        Use(Mine)
        Use(Kept)  # <-
        Use(Company)  # <-
""",
            'PublishTo refers to registry "company" declared at '
            f"{designs.tmp_path / 'kept_tools.py'}:2, which another design evaluation in "
            "this process created",
            'FromRegistry refers to registry "company"',
            'Export refers to toolset "kept" declared at ',
            'Use refers to toolset "kept"',
            'Use refers to registry "company"',
        )
    finally:
        sys.modules.pop("kept_tools", None)


@pytest.mark.parametrize(
    "importing", ["from .tools import Records", "from pkg.tools import Records"]
)
def test_a5_a_design_inside_a_package_imports_its_siblings(
    designs: DesignRunner, importing: str
) -> None:
    """Relative and package imports work whichever way agentgen was started: the console
    script does not put the current folder on sys.path, ``python -m`` does (only the latter
    used to load this design)."""
    import sys

    from agentgen.codegen.loader import load_design

    package = designs.tmp_path / "project" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "tools.py").write_text(
        "from agentgen.dsl import *\n"
        'Records = Toolset("records", lambda: (Tool("lookup", "L."), Tool("search", "S.")))\n'
    )
    design = package / "design.py"
    design.write_text(
        f"{importing}\n"
        "from agentgen.dsl import *\n"
        'Service("svc", lambda: Agent("a", "A.",\n'
        '    lambda: Use(Records, lambda: Deferred("serch"))))\n'
    )
    assert str(package.parent) not in sys.path
    (error,) = load_design(design).errors
    assert error.loc.line == 4 and 'unknown tool "serch"' in error.message
    assert "pkg" not in sys.modules and "pkg.tools" not in sys.modules
    assert str(package.parent) not in sys.path and str(package) not in sys.path


def test_a5_two_designs_in_two_threads_do_not_mix(designs: DesignRunner) -> None:
    from agentgen.codegen.loader import load_design

    paths = [designs.write(f'T = Toolset("t{i}", lambda: Tool("x", "X."))\n' * 1) for i in range(2)]
    results: dict[int, list[str]] = {}

    def load(i: int) -> None:
        results[i] = [t.name for t in load_design(paths[i]).root.toolsets]

    threads = [threading.Thread(target=load, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {0: ["t0"], 1: ["t1"]}


def test_dsl_outside_a_load_explains_itself() -> None:
    with pytest.raises(NoDesignContextError, match=re.escape("agentgen validate design.py")):
        dsl.Toolset("records")


def test_evaluate_in_process() -> None:
    def design() -> None:
        records = dsl.Toolset("records", lambda: dsl.Tool("lookup", "Look up."))
        dsl.Service("svc", lambda: dsl.Agent("a", "A.", lambda: dsl.Use(records, dsl.Deferred)))

    root = dsl.evaluate(design)
    assert root.agents()[0].uses[0].resolved_deferred == ["lookup"]
    with pytest.raises(dsl.DesignErrors) as caught:
        dsl.evaluate(lambda: dsl.Toolset("records"))
    assert "toolset declares no tools" in str(caught.value)
