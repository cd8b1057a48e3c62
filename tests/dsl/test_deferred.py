"""SPEC B: Deferred selection (loading, never permission)."""

from __future__ import annotations

from agentgen.dsl.expr import UseExpr
from tests.conftest import DesignRunner

RECORDS = """
def records():
    Tool("lookup", "Look up a record by its ID.")
    Tool("search", "Search records.")
    Tool("analyze", "Analyze records.")
Records = Toolset("records", records)
"""


def only_use(root: object, agent: str = "assistant") -> UseExpr:
    from agentgen.dsl.expr import RootExpr

    assert isinstance(root, RootExpr)
    (found,) = [a for a in root.agents() if a.name == agent]
    assert len(found.uses) >= 1
    return found.uses[0]


def test_b1_deferred_without_names_defers_every_tool(designs: DesignRunner) -> None:
    root = designs.load(
        RECORDS
        + """
Service("assistant", lambda: Agent("assistant", "Find records.",
    lambda: Use(Records, lambda: Deferred())))
"""
    )
    use = only_use(root)
    assert use.defers_all
    assert use.resolved_deferred == ["analyze", "lookup", "search"]


def test_b1_bare_deferred_as_body_means_defer_all(designs: DesignRunner) -> None:
    root = designs.load(
        RECORDS
        + """
Service("assistant", lambda: Agent("assistant", "Find records.", lambda: Use(Records, Deferred)))
"""
    )
    assert only_use(root).resolved_deferred == ["analyze", "lookup", "search"]


def test_b2_repeated_deferred_is_valid(designs: DesignRunner) -> None:
    root = designs.load(
        RECORDS
        + """
with Service("assistant"):
    with Agent("assistant", "Find records."):
        with Use(Records):
            Deferred()
            Deferred()
"""
    )
    assert only_use(root).resolved_deferred == ["analyze", "lookup", "search"]


def test_b3_named_selection_and_combination(designs: DesignRunner) -> None:
    root = designs.load(
        RECORDS
        + """
with Service("assistant"):
    with Agent("assistant", "Find records."):
        with Use(Records):
            Deferred("search")
            Deferred("analyze")
    Agent("other", "Same, one call.", lambda: Use(Records, lambda: Deferred("search", "analyze")))
"""
    )
    assert only_use(root).resolved_deferred == ["analyze", "search"]
    assert only_use(root, "other").resolved_deferred == ["analyze", "search"]


def test_b4_empty_name_alone_or_among_others(designs: DesignRunner) -> None:
    errors = designs.check(
        RECORDS
        + """
with Service("assistant"):
    with Agent("assistant", "Find records."):
        with Use(Records):
            Deferred("")  # <-
            Deferred("search", "")  # <-
""",
        'agent "assistant" › Use(records): Deferred tool name cannot be empty',
        "Deferred tool name cannot be empty",
    )
    assert errors[0].where == 'service "assistant" › agent "assistant" › Use(records)'


def test_b4_names_given_as_a_list_are_answered_with_the_call_to_write(
    designs: DesignRunner,
) -> None:
    designs.check(
        RECORDS
        + """
with Service("assistant"):
    with Agent("assistant", "Find records."):
        with Use(Records):
            Deferred(["search", "analyze"])  # <-
            Deferred(3)  # <-
""",
        "Deferred tool names must be strings, got list; pass each name as an argument of its "
        'own: Deferred("search", "analyze")',
        "Deferred tool names must be strings, got int",
    )


def test_b4_duplicate_name_in_one_call_and_across_calls(designs: DesignRunner) -> None:
    designs.check(
        RECORDS
        + """
with Service("assistant"):
    with Agent("assistant", "Find records."):
        with Use(Records):
            Deferred("search", "search")  # <-
            Deferred("analyze")
            Deferred("analyze")  # <-
""",
        'Deferred tool name "search" is repeated in the same call',
        'Deferred tool name "analyze" is repeated (first selected at line 13)',
    )


def test_b4_a_failing_call_records_nothing(designs: DesignRunner) -> None:
    # Only the failing call's error: "search" from the rejected call was not recorded, so the
    # later valid Deferred("search") is not reported as a repeat.
    designs.check(
        RECORDS
        + """
with Service("assistant"):
    with Agent("assistant", "Find records."):
        with Use(Records):
            Deferred("search", "")  # <-
            Deferred("search")
""",
        "Deferred tool name cannot be empty",
    )


def test_b5_all_then_named_and_named_then_all(designs: DesignRunner) -> None:
    designs.check(
        RECORDS
        + """
with Service("assistant"):
    with Agent("assistant", "Find records."):
        with Use(Records):
            Deferred()
            Deferred("search")  # <-
    with Agent("other", "Find records."):
        with Use(Records):
            Deferred("search")
            Deferred()  # <-
""",
        "cannot be combined with Deferred() (every tool) in the same Use (Deferred() at line 12)",
        "cannot be combined with named Deferred(...) in the same Use (named selection at line 16)",
    )


def test_b6_deferred_in_toolset_definition_and_exports(designs: DesignRunner) -> None:
    designs.check(
        """
def records():
    Tool("lookup", "Look up a record by its ID.")
    Deferred()  # <-
Records = Toolset("records", records)
with Service("assistant"):
    Export(Records, lambda: Deferred("lookup"))  # <-
    with Agent("assistant", "Find records."):
        with Export("helpers"):
            Tool("ask", "Ask the assistant.")
            Deferred()  # <-
""",
        'toolset "records": Deferred must appear inside a consuming Use(...) body: the '
        "selection belongs to the consumer, not to the definition of toolset",
        "Deferred must appear inside a consuming Use(...) body: the selection belongs to the "
        "consumer, not to a service Export",
        "not to an agent Export",
    )


def test_b6_deferred_anywhere_else_is_a_scope_error(designs: DesignRunner) -> None:
    designs.check(
        """
Deferred()  # <-
def records():
    Tool("lookup", "Look up a record by its ID.", lambda: Deferred())  # <-
Records = Toolset("records", records)
Service("assistant", lambda: Agent("assistant", "Find records.", Deferred))  # <-
""",
        "Deferred is not valid at the top level of the design; it belongs inside a consuming "
        "Use(...) body",
        'Deferred is not valid inside tool "lookup"; it belongs inside a consuming Use(...) body',
        'Deferred is not valid inside agent "assistant"',
    )


def test_b7_selection_belongs_to_that_consumer_only(designs: DesignRunner) -> None:
    root = designs.load(
        RECORDS
        + """
with Service("assistant"):
    Agent("assistant", "Find records.", lambda: Use(Records, lambda: Deferred("search")))
    Agent("clerk", "All tools up front.", lambda: Use(Records))
    Export(Records)
"""
    )
    assert only_use(root).resolved_deferred == ["search"]
    clerk = only_use(root, "clerk")
    assert clerk.deferred == [] and clerk.resolved_deferred == []
    assert [t.name for t in clerk.resolved_tools] == ["lookup", "search", "analyze"]
    (records,) = root.toolsets
    assert not hasattr(records, "deferred")
    assert root.services[0].exports[0].toolset is records


def test_b8_unknown_qualified_and_python_names(designs: DesignRunner) -> None:
    designs.check(
        RECORDS
        + """
with Service("assistant"):
    with Agent("assistant", "Find records."):
        with Use(Records):
            Deferred("serach")  # <-
            Deferred("records.search")  # <-
            Deferred("Analyze")  # <-
""",
        'agent "assistant.assistant" toolset "records": Deferred selects unknown tool "serach" '
        '(its tools: lookup, search, analyze); did you mean "search"?',
        'unknown tool "records.search" (its tools: lookup, search, analyze); use the local name '
        '"search"',
        'unknown tool "Analyze" (its tools: lookup, search, analyze); did you mean "analyze"?',
    )


def test_b8_a_name_close_to_none_gets_no_suggestion(designs: DesignRunner) -> None:
    (error,) = designs.check(
        RECORDS
        + """
with Service("assistant"):
    Agent("assistant", "Find.", lambda: Use(Records, lambda: Deferred("weather")))  # <-
""",
        'Deferred selects unknown tool "weather" (its tools: lookup, search, analyze)',
    )
    assert "did you mean" not in str(error)


def test_b8_names_of_a_toolset_without_tools_are_not_reported_again(
    designs: DesignRunner,
) -> None:
    designs.check(
        """
def records():
    Tool("lookup", "Look up a record by its ID.")  # <-
Records = Toolset("records", records())  # <-
Service("assistant", lambda: Agent("assistant", "Find records.",
    lambda: Use(Records, lambda: Deferred("lookup", "search"))))
""",
        "Tool is not valid at the top level of the design",
        # The body, called before Toolset ran, is the one mistake: "declares no tools" would
        # only say it again, and send the reader to add tools the body already declares.
        "Toolset takes a name, a source (FromRegistry/FromExternalMCP) and a body; got NoneType",
    )


def test_b8_names_include_inline_agent_and_external_mcp_tools(designs: DesignRunner) -> None:
    root = designs.load(
        """
def weather():
    Tool("get-forecast", "Forecast for a city.", lambda: Args({"type": "object"}))
Weather = Toolset("weather", FromExternalMCP("weather_server", "weather"), weather)
with Service("assistant"):
    with Agent("analyst", "Analyzes things."):
        Export("analysis", lambda: Tool("summarize", "Summarize a topic."))
    with Agent("assistant", "Find records."):
        Use(Weather, lambda: Deferred("get-forecast"))
        with Use("helpers"):
            Tool("answer", "Answer a question.")
            Tool("ping", "Check the service.")
            Deferred("answer")
"""
    )
    analysis = next(t for t in root.toolsets if t.name == "analysis")
    assistant = next(a for a in root.agents() if a.name == "assistant")
    with_export = designs.load(
        """
with Service("assistant"):
    with Agent("analyst", "Analyzes things."):
        with Export("analysis") as Analysis:
            Tool("summarize", "Summarize a topic.")
    Agent("assistant", "Uses the analyst.", lambda: Use(Analysis, lambda: Deferred("summarize")))
"""
    )
    assert analysis.owner == "agent-export"
    assert [u.resolved_deferred for u in assistant.uses] == [["get-forecast"], ["answer"]]
    agent_use = next(a for a in with_export.agents() if a.name == "assistant").uses[0]
    assert agent_use.resolved_deferred == ["summarize"]


def test_b8_named_tool_outside_the_consumers_subset(designs: DesignRunner) -> None:
    designs.check(
        RECORDS
        + """
with Service("assistant"):
    with Agent("assistant", "Find records."):
        with Use(Records):
            Tool("lookup")
            Tool("search")
            Deferred("analyze")  # <-
""",
        'Deferred selects tool "analyze", which this Use does not include (it includes: lookup, '
        "search)",
    )


def test_b9_registry_sources_reject_named_selection(designs: DesignRunner) -> None:
    designs.check(
        """
Company = Registry("company", lambda: URL("https://registry.example"))
Records = Toolset(FromRegistry(Company, "records"))
with Service("assistant"):
    Agent("reader", "Read records.", lambda: Use(Records, lambda: Deferred("search")))  # <-
    Agent("generalist", "Everything.", lambda: Use(Company, lambda: Deferred("x")))  # <-
    with Agent("ok", "Valid forms."):
        Use(Records, lambda: (Deferred(), Deferred()))
    Agent("ok2", "Valid forms.", lambda: Use(Company, Deferred))
""",
        'Deferred cannot select named tools from FromRegistry toolset "records" (its tools are '
        "resolved at run time); use Deferred()",
        "Deferred cannot select named tools from a whole registry (its tools are resolved at "
        "run time); use Deferred()",
    )


def test_b10_registry_sources_keep_the_flag_not_a_list(designs: DesignRunner) -> None:
    root = designs.load(
        """
Company = Registry("company", lambda: URL("https://registry.example"))
Records = Toolset(FromRegistry(Company, "records"))
with Service("assistant"):
    Agent("reader", "Read records.", lambda: Use(Records, Deferred))
    Agent("eager", "Read records.", lambda: Use(Records))
"""
    )
    reader, eager = (only_use(root, name) for name in ("reader", "eager"))
    assert reader.defers_all and reader.resolved_deferred == [] and reader.resolved_tools == []
    assert not eager.defers_all


def test_b11_removing_deferred_changes_nothing_but_the_selection(designs: DesignRunner) -> None:
    from agentgen.dsl.dump import dump

    with_deferred = designs.load(
        RECORDS
        + 'Service("s", lambda: Agent("a", "d", lambda: Use(Records, lambda: Deferred())))\n'
    )
    without = designs.load(
        RECORDS + 'Service("s", lambda: Agent("a", "d", lambda: Use(Records)))\n'
    )
    left, right = dump(with_deferred), dump(without)
    use_left = left["services"][0]["agents"][0]["uses"][0]
    use_right = right["services"][0]["agents"][0]["uses"][0]
    assert use_left.pop("deferred") and use_right.pop("deferred") == []
    assert use_left.pop("resolved_deferred") == ["analyze", "lookup", "search"]
    assert use_right.pop("resolved_deferred") == []
    assert left == right


def test_b12_continuation_tools_are_never_deferred(designs: DesignRunner) -> None:
    source = """
from pydantic import BaseModel
class Query(BaseModel):
    q: str
    cursor: str | None = None
class Page(BaseModel):
    ids: list[str]
    next_cursor: str | None = None
class More(BaseModel):
    cursor: str | None = None
def records():
    with Tool("search", "Search records."):
        Args(Query)
        Return(Page)
        BoundedResult(lambda: (Cursor("cursor"), NextCursor("next_cursor"), ContinueWith("more")))
    with Tool("more", "Next page of a search."):
        Args(More)
        Return(Page)
        BoundedResult(lambda: (Cursor("cursor"), NextCursor("next_cursor")))
Records = Toolset("records", records)
with Service("assistant"):
    Agent("all", "Defers all.", lambda: Use(Records, Deferred))
"""
    root = designs.load(source)
    assert only_use(root, "all").resolved_deferred == ["search"]
    designs.check(
        source
        + """
    Agent("named", "Names it.", lambda: Use(Records, lambda: Deferred("more")))  # <-
""",
        'Deferred selects "more", which continues the pagination of "search": continuation '
        "tools are never deferred (the model must see it to fetch the next page); remove it "
        "from Deferred(...)",
    )
