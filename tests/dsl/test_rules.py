"""Rules on tools, toolsets, agents and services beyond the Deferred and registry sections."""

from __future__ import annotations

from agentgen.dsl.names import name_problem
from agentgen.dsl.policy import MAX_TOOL_CALLS
from agentgen.runtime.contracts import limits
from tests.conftest import DesignRunner

MODELS = """
from pydantic import BaseModel, Field
class Pay(BaseModel):
    to: str
    amount: int
    note: str | None = None
class Query(BaseModel):
    q: str
    cursor: str | None = None
class Page(BaseModel):
    ids: list[str]
    next_cursor: str | None = None
class Strict(BaseModel):
    cursor: str
class Trace(BaseModel):
    steps: list[str]
"""


def test_duplicate_services_and_agents(designs: DesignRunner) -> None:
    designs.check(
        """
with Service("svc"):
    Agent("a", "First.")
    Agent("a", "Second.")  # <-
Service("svc")  # <-
Service("other", lambda: Agent("a", "Same agent name, other service: fine."))
""",
        'agent name "a" duplicates an agent declared at',
        'service name "svc" duplicates a service declared at',
    )


def test_tools_need_descriptions(designs: DesignRunner) -> None:
    designs.check(
        """
with Toolset("records"):
    Tool("lookup")  # <-
    Tool("search", lambda: Description("Search records."))
    Tool("empty", "  ")  # <-
""",
        'tool "lookup": tool needs a description',
        "Tool description cannot be empty",
    )


def test_external_mcp_toolsets_need_inline_tools_and_distinct_identifiers(
    designs: DesignRunner,
) -> None:
    designs.check(
        """
Empty = Toolset("empty", FromExternalMCP("srv", "empty"))  # <-
def tools():
    Tool("get-forecast", "Forecast.")
    Tool("get_forecast", "Forecast again.")  # <-
Weather = Toolset("weather", FromExternalMCP("srv", "weather"), tools)
Bad = Toolset("bad", FromExternalMCP("", "bad"), lambda: Tool("x", "X."))  # <-
""",
        "external MCP toolsets require inline Tool declarations",
        'tool names "get-forecast" and "get_forecast" map to the same Python identifier',
        "FromExternalMCP service cannot be empty",
    )


def test_mcp_name_maps_a_design_tool_to_the_servers_name(designs: DesignRunner) -> None:
    # Server names may have dots, leading digits or underscores and up to 128 characters; the
    # design's name stays a valid agentgen name, MCPName says what tools/call sends.
    long = "a" * 128
    root = designs.load(
        f"""
def tools():
    Tool("read", "Read a file.", lambda: MCPName("files.read"))
    Tool("codes", "2FA codes.", lambda: MCPName("2fa_codes"))
    Tool("hidden", "Hidden.", lambda: MCPName("_hidden"))
    Tool("long", "Long.", lambda: MCPName("{long}"))
    Tool("plain", "Plain.")
    Tool("same", "Same.", lambda: MCPName("same"))
Files = Toolset("files", FromExternalMCP("fs", "files"), tools)
"""
    )
    (files,) = root.toolsets
    assert {tool.name: tool.server_name for tool in files.tools} == {
        "read": "files.read",
        "codes": "2fa_codes",
        "hidden": "_hidden",
        "long": long,
        "plain": "plain",
        "same": "same",
    }


def test_mcp_name_is_checked_on_its_line(designs: DesignRunner) -> None:
    long = "a" * 129
    designs.check(
        f"""
def tools():
    Tool("files.read", "Read a file.")  # <-
    Tool("read", "Read.", lambda: MCPName("files.read"))
    Tool("stat", "Stat.", lambda: (
        MCPName("files.read"),  # <-
    ))
    Tool("plain", "Plain.")
    Tool("other", "Other.", lambda: MCPName("plain"))  # <-
    Tool("spaced", "Spaced.", lambda: MCPName("files read"))  # <-
    Tool("long", "Long.", lambda: MCPName("{long}"))  # <-
    Tool("twice", "Twice.", lambda: (MCPName("a"), MCPName("b")))  # <-
    Tool("typed", "Typed.", lambda: MCPName(3))  # <-
Files = Toolset("files", FromExternalMCP("fs", "files"), tools)
Toolset("local", lambda: Tool("x", "X.", lambda: MCPName("y")))  # <-
MCPName("top")  # <-
""",
        "tool name \"files.read\" must be letters, digits, '_' and '-', starting with a letter; "
        'try "files_read" with MCPName("files.read") in its body',
        'tool "stat" and tool "read" (line 5) both call the MCP server\'s tool "files.read" in '
        'toolset "files"; give each its own MCPName',
        'tool "other" and tool "plain" (line 9) both call the MCP server\'s tool "plain"',
        'MCPName "files read" is not an MCP tool name: 1 to 128 ASCII letters, digits',
        f'MCPName "{long}" is not an MCP tool name',
        'MCPName is already set for tool "twice" (line 13)',
        "MCPName takes the server's tool name as a string, got int",
        'MCPName is only valid for tools of FromExternalMCP toolsets (tool "x" is not one)',
        "MCPName is not valid at the top level of the design; it belongs inside a Tool body",
    )


def test_an_overlong_mcp_tool_name_points_to_mcp_name(designs: DesignRunner) -> None:
    long = "get_" + "x" * 70
    designs.check(
        f"""
Toolset("mcp", FromExternalMCP("srv", "mcp"), lambda: Tool("{long}", "L."))  # <-
""",
        f'tool name "{long}" is longer than 64 characters (74); shorten it; name the tool within '
        f'the limit and call the server\'s tool by its own name with MCPName("{long}") in its body',
    )


def test_confirmation_requires_both_templates_that_parse_and_name_arguments(
    designs: DesignRunner,
) -> None:
    designs.check(
        MODELS
        + """
with Toolset("payments"):
    with Tool("pay", "Pay someone."):
        Args(Pay)
        with Confirmation():
            Title("Approve payment")
            PromptTemplate("Pay {{ amount }} to {{ to }}{{ args.get('note', '') }}?")
            DeniedResultTemplate("Payment to {{ to }} was denied.")
    with Tool("refund", "Refund someone."):
        Args(Pay)
        Confirmation(lambda: PromptTemplate("Refund {{ amount }}?"))  # <-
    with Tool("void", "Void a payment."):
        Args(Pay)
        with Confirmation():
            PromptTemplate("Void {{ amount ")  # <-
            DeniedResultTemplate("Not voided: {{ reason }}")  # <-
""",
        "Confirmation requires a DeniedResultTemplate(...)",
        "PromptTemplate is not a valid template",
        'DeniedResultTemplate refers to "reason", which the tool\'s Args do not declare '
        "(arguments: amount, note, to",
    )


def test_confirmation_templates_are_read_with_the_runtime_sandbox(designs: DesignRunner) -> None:
    """What Jinja's plain sandbox has and the runtime's lacks, unknown filters and tests, and
    templates over the runtime's length limit: each failed every confirmation at run time."""
    designs.check(
        MODELS
        + """
from pydantic import BaseModel
class Odd(BaseModel):
    lipsum: str
    ids: list[str] = []
with Toolset("payments"):
    with Tool("pay", "Pay someone."):
        Args(Pay)
        with Confirmation():
            PromptTemplate("Pay {{ amount | random }} to {{ to | pprint }}?")  # <- <-
            DeniedResultTemplate("{% if to is nosuchtest %}x{% endif %}{{ lipsum(1) }}")  # <- <-
    with Tool("refund", "Refund someone."):
        Args(Pay)
        with Confirmation():
            PromptTemplate("Refund {{ amount | uper }} to {{ to | tojson }}?")  # <-
            DeniedResultTemplate("{% set ns = namespace(n=1) %}{{ ns.n }}")  # <-
    with Tool("long", "Long."):
        Args(Pay)
        with Confirmation():
            PromptTemplate("{{ to }}" + "x" * 20000)  # <-
            DeniedResultTemplate("{{ to | upper }} {{ amount is number }} {{ range(2) | list }}")
    with Tool("shadowed", "An argument named like a global."):
        Args(Odd)
        with Confirmation():
            PromptTemplate("{{ lipsum }} {{ ids | join(', ') }}")
            DeniedResultTemplate("Denied.")
""",
        'PromptTemplate uses the filter "pprint", which confirmation templates cannot use: the '
        "runtime's template sandbox leaves it out",
        'PromptTemplate uses the filter "random"',
        'DeniedResultTemplate uses the test "nosuchtest", which confirmation templates cannot '
        "use: Jinja has no such test",
        'DeniedResultTemplate uses "lipsum", which confirmation templates cannot use',
        'PromptTemplate uses the filter "uper", which confirmation templates cannot use: Jinja '
        'has no such filter; did you mean "upper"?',
        'DeniedResultTemplate uses "namespace"',
        "PromptTemplate is too long: the template is 20008 characters long; templates are "
        "limited to 16384",
    )


def test_agents_calling_each_other_through_their_exports_are_refused(
    designs: DesignRunner,
) -> None:
    """A uses B's export and B uses A's: each run of one started a child run of the other,
    without any bound (only the model's choice ended it)."""
    designs.check(
        """
with Service("svc"):
    a = Agent("a", "A.")
    b = Agent("b", "B.")
    with a:
        AskA = Export("ask_a", lambda: Tool("ask", "Ask A."))
        with b:
            AskB = Export("ask_b", lambda: Tool("ask", "Ask B."))
            Use(AskA)  # <-
        Use(AskB)
with Service("ring"):
    x, y, z = Agent("x", "X."), Agent("y", "Y."), Agent("z", "Z.")
    with x:
        AskX = Export("ask_x", lambda: Tool("ask", "Ask X."))
        with y:
            AskY = Export("ask_y", lambda: Tool("ask", "Ask Y."))
            with z:
                Export("ask_z", lambda: Tool("ask", "Ask Z."))
                Use(AskX)  # <-
            Use(z.exports[0])
        Use(AskY)
with Service("chain"):
    Agent("lead", "Lead.", lambda: (Use(AskA), Use(AskB)))
""",
        'agents "svc.a" → "svc.b" → "svc.a" call each other through their exported tools '
        '("svc.a" uses Use(ask_b) at line 11, "svc.b" uses Use(ask_a) at line 10): a run of one '
        "would start child runs of the other without end; remove one of these Uses",
        'agents "ring.x" → "ring.y" → "ring.z" → "ring.x" call each other',
    )


def test_agents_calling_each_other_through_a_registry_are_refused(
    designs: DesignRunner,
) -> None:
    """An agent export published to a registry is called through that registry too: B
    reading A's published export by name while A uses B's export, or an agent reading the
    whole registry its own export is published to, started child runs without end."""
    designs.check(
        """
Company = Registry("company", lambda: URL("https://registry.example"))
AskARemote = Toolset("ask_a_remote", FromRegistry(Company, "svc.ask_a"))
Other = Toolset("other", FromRegistry(Company, "ask_a"))
with Service("svc"):
    with Agent("b", "B."):
        AskB = Export("ask_b", lambda: Tool("ask", "Ask B."))
        Use(AskARemote)
    with Agent("a", "A."):
        with Export("ask_a"):
            Tool("ask", "Ask A.")
            PublishTo(Company)
        Use(AskB)  # <-
    with Agent("self", "Self."):
        with Export("ask_self"):
            Tool("ask", "Ask me.")
            PublishTo(Company)
        Use(Company)  # <-
    Agent("reader", "Reads the registry.", lambda: Use(Company))
    Agent("other", "Another provider's ask_a.", lambda: (Use(Other), Use(AskB)))
""",
        'agents "svc.b" → "svc.a" → "svc.b" call each other through their exported tools '
        '("svc.b" uses Use(ask_a_remote) at line 9, "svc.a" uses Use(ask_b) at line 14)',
        'agent "svc.self" calls itself: "svc.self" uses Use(registry "company") at line 19, which '
        "serves the agent's own exported tools once published (PublishTo): each run would "
        "start child runs of itself without end; remove this Use or the export's PublishTo",
    )


def test_bounded_results_and_paging_fields(designs: DesignRunner) -> None:
    designs.check(
        MODELS
        + """
with Toolset("records"):
    with Tool("search", "Search records."):
        Args(Query)
        Return(Page)
        BoundedResult(lambda: (Cursor("cursor"), NextCursor("next_cursor")))
    with Tool("half", "Cursor only."):
        Args(Query)
        Return(Page)
        BoundedResult(lambda: Cursor("cursor"))  # <-
    with Tool("wrong", "Wrong fields."):
        Args(Strict)
        Return(Page)
        with BoundedResult():
            Cursor("cursor")  # <-
            NextCursor("missing")  # <-
    with Tool("untyped", "No types."):
        BoundedResult(lambda: (Cursor("c"), NextCursor("n")))  # <- <-
    with Tool("continues", "Continues."):
        Args(Query)
        Return(Page)
        with BoundedResult():
            Cursor("cursor")
            NextCursor("next_cursor")
            ContinueWith("nowhere")  # <-
    with Tool("twice_a", "A."):
        Args(Query)
        Return(Page)
        BoundedResult(lambda: (Cursor("cursor"), NextCursor("next_cursor"), ContinueWith("search")))
    with Tool("twice_b", "B."):
        Args(Query)
        Return(Page)
        with BoundedResult():
            Cursor("cursor")
            NextCursor("next_cursor")
            ContinueWith("search")  # <-
    with Tool("needs_cursor", "C."):
        Args(Query)
        Return(Page)
        with BoundedResult():
            Cursor("cursor")
            NextCursor("next_cursor")
            ContinueWith("plain")  # <-
    Tool("plain", "Plain tool.")
    with Tool("pages_itself", "Pages itself."):
        Args(Query)
        Return(Page)
        with BoundedResult():
            Cursor("cursor")
            NextCursor("next_cursor")
            ContinueWith("pages_itself")  # <-
""",
        "Cursor() requires NextCursor() to configure paging",
        'Cursor("cursor"): field "cursor" of Strict must be an optional string',
        'NextCursor("missing"): Return type Page has no field "missing" (fields: ids, next_cursor)',
        'Cursor("c") needs the tool to declare Args(...)',
        'NextCursor("n") needs the tool to declare Return(...)',
        'ContinueWith references unknown tool "nowhere"',
        'continuation tool "search" is referenced by more than one bounded tool ("twice_a" and '
        '"twice_b")',
        'continuation tool "plain" must declare Cursor(...) inside its own BoundedResult',
        'ContinueWith cannot name the tool itself ("pages_itself"): a tool whose own Cursor '
        "fetches its next pages needs no ContinueWith, so leave it out; ContinueWith names "
        "another tool of the toolset that fetches them",
    )


def test_server_data(designs: DesignRunner) -> None:
    designs.check(
        MODELS
        + """
with Toolset("records"):
    with Tool("search", "Search records."):
        ServerData("trace", Trace, "Execution trace.", audience="internal")
        ServerData("trace", Trace)  # <-
        ServerData("", Trace)  # <-
        ServerData("raw", None)  # <-
        ServerData("odd", Trace, audience="everyone")  # <-
""",
        'ServerData kind "trace" must be unique within a tool',
        "ServerData kind must be a non-empty string",
        'ServerData("raw") requires a schema type',
        'ServerData("odd") audience must be one of timeline, internal, evidence',
    )


def test_tags_labels_titles_and_descriptions_once(designs: DesignRunner) -> None:
    designs.check(
        """
with Toolset("records"):
    Tags("a", "a")  # <-
    Description("Records.")
    Description("Again.")  # <-
    with Tool("t", "T."):
        Title("One")
        Title("Two")  # <-
        RequiredLabels("tenant")
        RequiredLabels("tenant")  # <-
        Tags()  # <-
""",
        'tag "a" is repeated on toolset "records"',
        'description of toolset "records" is already set',
        'Title is already set for tool "t"',
        'required label "tenant" is repeated on tool "t"',
        "Tags needs at least one tag",
    )


def test_use_and_export_subsets_and_self_use(designs: DesignRunner) -> None:
    root = designs.load(
        """
with Toolset("records") as Records:
    Tool("lookup", "Look up.")
    Tool("search", "Search.")
with Service("svc"):
    Agent("subset", "Lookup only.", lambda: Use(Records, lambda: Tool("lookup")))
    Export(Records)
"""
    )
    subset_agent = next(a for a in root.agents() if a.name == "subset")
    assert [t.name for t in subset_agent.uses[0].resolved_tools] == ["lookup"]
    assert [t.name for t in root.services[0].exports[0].resolved_tools] == ["lookup", "search"]
    designs.check(
        """
with Toolset("records") as Records:
    Tool("lookup", "Look up.")
with Service("svc"):
    with Agent("a", "A."):
        with Use(Records):
            Tool("nope")  # <-
            Tool("lookup")
            Tool("lookup")  # <-
            Tool("lookup", "With a description.")  # <-
    with Agent("b", "B."):
        with Export("mine") as Mine:
            Tool("ask", "Ask.")
        Use(Mine)  # <-
    Export(Records)
    Export(Records)  # <-
""",
        'selects unknown tool "nope" of toolset "records" (its tools: lookup)',
        'tool "lookup" is selected more than once',
        "selects its tools by name only",
        'agent "b" cannot use a toolset it exports itself',
        'service "svc" exports toolset "records" more than once',
    )


def test_run_policy(designs: DesignRunner) -> None:
    root = designs.load(
        """
with Toolset("records") as Records:
    Tool("lookup", "Look up.", lambda: Tags("read"))
    Tool("find", "Find.", lambda: Tags("search"))
    Tool("drop", "Drop.", lambda: Tags("admin"))
with Service("svc"):
    with Agent("a", "A."):
        Use(Records)
        with RunPolicy():
            MaxToolCalls(10)
            MaxConsecutiveFailedToolCalls(2)
            AllowTags("read", "search")
            DenyTags("admin")
"""
    )
    policy = root.agents()[0].policy
    assert policy is not None
    assert (policy.max_tool_calls, policy.max_consecutive_failed_tool_calls) == (10, 2)
    assert [(c.allowed_any, c.denied_any) for c in policy.tag_clauses] == [
        (("read", "search"), ()),
        ((), ("admin",)),
    ]
    designs.check(
        """
with Service("svc"):
    with Agent("a", "A."):
        with RunPolicy():
            MaxToolCalls(-1)  # <-
            MaxToolCalls(True)  # <- <-
            AllowTags()  # <-
            DenyTags("")  # <-
            AllowTags("read", "write", "read", "write")  # <-
        RunPolicy()  # <-
""",
        "MaxToolCalls must be non-negative, got -1",
        "MaxToolCalls is already set for this RunPolicy (line 6); keep one",
        "MaxToolCalls takes an integer, got bool",
        "AllowTags needs at least one tag",
        "DenyTags tag cannot be empty",
        # It was generated as allowed_any=("read", "write", "read", "write").
        'AllowTags repeats tag(s) "read", "write"; give each tag once',
        'agent "a" already has a RunPolicy',
    )


def test_zero_consecutive_failed_tool_calls_is_refused(designs: DesignRunner) -> None:
    # It was accepted and generated: no failure is needed to reach 0 failures in a row, so every
    # activity after the first was final-answer-only. MaxToolCalls(0) stays a valid policy.
    root = designs.load(
        """
with Service("svc"):
    Agent("a", "A.", lambda: RunPolicy(lambda: (MaxToolCalls(0), MaxConsecutiveFailedToolCalls(1))))
"""
    )
    policy = root.agents()[0].policy
    assert policy is not None
    assert (policy.max_tool_calls, policy.max_consecutive_failed_tool_calls) == (0, 1)
    designs.check(
        """
with Service("svc"):
    Agent("a", "A.", lambda: RunPolicy(lambda: MaxConsecutiveFailedToolCalls(0)))  # <-
    Agent("b", "B.", lambda: RunPolicy(lambda: MaxConsecutiveFailedToolCalls(-2)))  # <-
""",
        "MaxConsecutiveFailedToolCalls must be at least 1, got 0: no failure is needed to reach 0 "
        "failures in a row, so every activity after the first would be final-answer-only; give 1 "
        "or more, or leave the setting out for no limit",
        "MaxConsecutiveFailedToolCalls must be at least 1, got -2",
    )


def test_policy_counts_are_bounded_as_the_runtime_bounds_them(designs: DesignRunner) -> None:
    # MaxToolCalls(10**6) was accepted and generated: a count no model's context can hold
    # bounds nothing. The runtime's RunPolicy refuses what the DSL refuses.
    assert MAX_TOOL_CALLS == limits.MAX_TOOL_CALLS == 10_000
    root = designs.load(
        """
with Service("svc"):
    Agent("a", "A.", lambda: RunPolicy(lambda: (
        MaxToolCalls(10_000), MaxConsecutiveFailedToolCalls(10_000)
    )))
"""
    )
    policy = root.agents()[0].policy
    assert policy is not None
    assert (policy.max_tool_calls, policy.max_consecutive_failed_tool_calls) == (10_000, 10_000)
    designs.check(
        """
with Service("svc"):
    Agent("a", "A.", lambda: RunPolicy(lambda: MaxToolCalls(10_001)))  # <-
    Agent("b", "B.", lambda: RunPolicy(lambda: MaxConsecutiveFailedToolCalls(10**5000)))  # <-
""",
        "MaxToolCalls must be at most 10000, got 10001: a run sends every call and its result to "
        "the model again at each step, so more calls than that no longer fit a model's context "
        "and bound nothing; give 10000 or fewer, or leave the setting out for no limit",
        "MaxConsecutiveFailedToolCalls must be at most 10000, got an integer of 16610 bits",
    )


def test_model_timeout_takes_the_registry_duration_forms(designs: DesignRunner) -> None:
    root = designs.load(
        """
from datetime import timedelta
with Service("svc"):
    Agent("seconds", "A.", lambda: RunPolicy(lambda: ModelTimeout(45)))
    Agent("text", "A.", lambda: RunPolicy(lambda: ModelTimeout("1m30s")))
    Agent("millis", "A.", lambda: RunPolicy(lambda: ModelTimeout("250ms")))
    Agent("delta", "A.", lambda: RunPolicy(lambda: ModelTimeout(timedelta(minutes=2))))
    Agent("unset", "A.", lambda: RunPolicy(lambda: MaxToolCalls(3)))
"""
    )
    timeouts = {a.name: a.policy.model_timeout for a in root.agents() if a.policy is not None}
    assert timeouts == {
        "seconds": 45.0, "text": 90.0, "millis": 0.25, "delta": 120.0, "unset": None,
    }  # fmt: skip


def test_a_model_timeout_under_one_millisecond_is_refused(designs: DesignRunner) -> None:
    designs.check(
        """
with Service("svc"):
    Agent("a", "A.", lambda: RunPolicy(lambda: ModelTimeout("0.5ms")))  # <-
    Agent("b", "B.", lambda: RunPolicy(lambda: ModelTimeout(1e-7)))  # <-
    Agent("c", "C.", lambda: RunPolicy(lambda: ModelTimeout("1ms")))
""",
        "ModelTimeout must be at least 1ms (timers and the registry count whole milliseconds), "
        'got "0.5ms"; give the time allowed, or leave the setting out for no bound',
        "ModelTimeout must be at least 1ms (timers and the registry count whole milliseconds), "
        "got 1e-07",
    )


def test_model_timeout_must_be_positive_finite_and_set_once(designs: DesignRunner) -> None:
    bound = "must be a positive, finite duration, got {}; give the time allowed, or leave"
    designs.check(
        """
with Service("svc"):
    Agent("a0", "A.", lambda: RunPolicy(lambda: ModelTimeout(0)))  # <-
    Agent("a1", "A.", lambda: RunPolicy(lambda: ModelTimeout("0s")))  # <-
    Agent("a2", "A.", lambda: RunPolicy(lambda: ModelTimeout(-1)))  # <-
    Agent("a3", "A.", lambda: RunPolicy(lambda: ModelTimeout(float("inf"))))  # <-
    Agent("a4", "A.", lambda: RunPolicy(lambda: ModelTimeout(float("nan"))))  # <-
    Agent("a5", "A.", lambda: RunPolicy(lambda: ModelTimeout("1" + "0" * 400 + "s")))  # <-
    Agent("a6", "A.", lambda: RunPolicy(lambda: ModelTimeout(10**400)))  # <-
    Agent("a7", "A.", lambda: RunPolicy(lambda: ModelTimeout(True)))  # <-
    Agent("a8", "A.", lambda: RunPolicy(lambda: ModelTimeout("soon")))  # <-
    with Agent("a", "A."):
        with RunPolicy():
            ModelTimeout("30s")
            ModelTimeout(60)  # <-
    with Agent("b", "B."):
        ModelTimeout("30s")  # <-
""",
        "ModelTimeout " + bound.format("0"),
        "ModelTimeout " + bound.format('"0s"'),
        "ModelTimeout " + bound.format("-1"),
        "ModelTimeout " + bound.format("inf"),
        "ModelTimeout " + bound.format("nan"),
        "ModelTimeout " + bound.format('"1' + "0" * 400 + 's"'),
        "ModelTimeout is too long: the number exceeds any float",
        "ModelTimeout expected a duration, got bool",
        'ModelTimeout invalid duration "soon": use a number of seconds or a string like',
        "ModelTimeout is already set for this RunPolicy (line 15); keep one",
        'ModelTimeout is not valid inside agent "b"; it belongs inside a RunPolicy body',
    )


def test_a_repeated_policy_clause_is_a_repeat_even_when_the_first_was_refused(
    designs: DesignRunner,
) -> None:
    # A refused first clause left no trace, so the second was taken without a word: the repeat
    # came out only once the first was fixed, in another run (and a fix of the first then
    # failed on a line nobody had touched).
    designs.check(
        """
with Service("svc"):
    with Agent("a", "A."):
        with RunPolicy():
            MaxToolCalls(-1)  # <-
            MaxToolCalls(5)  # <-
            MaxConsecutiveFailedToolCalls(0)  # <-
            MaxConsecutiveFailedToolCalls(2)  # <-
            ModelTimeout("soon")  # <-
            ModelTimeout("10s")  # <-
            MaxToolCalls(True)  # <- <-
""",
        "MaxToolCalls must be non-negative, got -1",
        "MaxToolCalls is already set for this RunPolicy (line 6); keep one",
        "MaxConsecutiveFailedToolCalls must be at least 1, got 0",
        "MaxConsecutiveFailedToolCalls is already set for this RunPolicy (line 8); keep one",
        'ModelTimeout invalid duration "soon"',
        "ModelTimeout is already set for this RunPolicy (line 10); keep one",
        "MaxToolCalls is already set for this RunPolicy (line 6); keep one",
        "MaxToolCalls takes an integer, got bool",
    )


def test_publish_to(designs: DesignRunner) -> None:
    root = designs.load(
        """
Company = Registry("company", lambda: URL("https://registry.example"))
Records = Toolset("records", lambda: (Tool("lookup", "Look up."), PublishTo(Company)))
"""
    )
    assert [r.name for r, _ in root.toolsets[0].publish_to] == ["company"]
    designs.check(
        """
Company = Registry("company", lambda: URL("https://registry.example"))
with Toolset("records"):
    Tool("lookup", "Look up.")
    PublishTo(Company)
    PublishTo(Company)  # <-
    PublishTo("company")  # <-
Remote = Toolset(FromRegistry(Company, "remote"), lambda: PublishTo(Company))  # <-
""",
        'toolset "records" is already published to registry "company"',
        "PublishTo requires a Registry(...) expression, got str; pass the value Registry(...) "
        'returned, not its name: Company = Registry("company", ...), then PublishTo(Company)',
        'registry toolset "remote" cannot be published: its provider owns it',
    )


def test_names_reject_double_and_trailing_underscores(designs: DesignRunner) -> None:
    # a__b and a_ would camel-case like a_b and a in generated class names.
    designs.check(
        """
Toolset("a__b", lambda: Tool("x", "X."))  # <-
with Toolset("ok"):
    Tool("trailing_", "T.")  # <-
    Tool("fine_1", "F.")
Service("svc_")  # <-
Toolset("mcp", FromExternalMCP("srv", "mcp"), lambda: Tool("get__it", "Server names stay."))
""",
        'toolset name "a__b" must not contain a double underscore or end with an underscore '
        '(generated class names would collide); try "a_b"',
        'tool name "trailing_" must not contain a double underscore or end with an underscore',
        'service name "svc_" must not contain a double underscore',
    )


def test_keyword_and_overlong_names_say_what_to_do(designs: DesignRunner) -> None:
    long = "x" * 65
    designs.check(
        f"""
Toolset("import", lambda: Tool("{long}", "L."))  # <- <-
Service("class")  # <-
""",
        'toolset name "import" is a Python keyword; generated code cannot use it; rename it, '
        'for example "import_toolset"',
        f'tool name "{long}" is longer than 64 characters (65); shorten it',
        'service name "class" is a Python keyword; generated code cannot use it; rename it, '
        'for example "class_service"',
    )


def test_suggested_names_are_valid_names(designs: DesignRunner) -> None:
    # "Import" was told to try "import" and "class_" to try "class" (both keywords); a long
    # name in another script got a suggestion over the 64-character limit.
    long = "東京大阪名古屋札幌福岡横浜神戸" * 2
    designs.check(
        f"""
Toolset("Import", lambda: Tool("class_", "C."))  # <- <-
Service("{long}")  # <-
""",
        'toolset name "Import" must be a lower snake_case identifier (a-z, 0-9, _; starting '
        'with a letter); try "import_toolset"',
        'tool name "class_" must not contain a double underscore or end with an underscore '
        '(generated class names would collide); try "class_tool"',
        f'service name "{long}" must be a lower snake_case ASCII identifier',
    )
    (error,) = designs.errors(f'Service("{long}")')
    suggestion = str(error).rsplit('try "', 1)[1].rstrip('"')
    assert 0 < len(suggestion) <= 64 and name_problem("service", suggestion) is None


def test_a_registry_toolset_named_by_its_source_gets_a_local_name(designs: DesignRunner) -> None:
    # Registrations are named service.toolset: the message told to rename the registry's
    # toolset to "hr_directory", which the registry does not have.
    designs.check(
        """
Company = Registry("company", lambda: URL("http://127.0.0.1:9090"))
Directory = Toolset(FromRegistry(Company, "hr.directory"))  # <-
Files = Toolset(FromExternalMCP("fs", "Files"), lambda: Tool("read", "R."))  # <-
Fine = Toolset(FromRegistry(Company, "directory"))
""",
        'the source\'s toolset name "hr.directory" cannot name a toolset of this design; give '
        'it a local one: Toolset("directory", FromRegistry(Company, "hr.directory"))',
        'the source\'s toolset name "Files" cannot name a toolset of this design; give it a '
        'local one: Toolset("files", FromExternalMCP("fs", "Files"))',
    )


def test_an_agent_exports_only_tools_it_defines(designs: DesignRunner) -> None:
    source = """
with Toolset("records") as Records:
    Tool("lookup", "Look up.")
with Service("svc"):
    Export(Records)
    with Agent("a", "A."):
        Export(Records)  # <-
        with Export(Records) as Sub:  # <-
            Tool("lookup")
        Use(Sub)
        Export("ask", lambda: Tool("ask", "Ask the agent."))
"""
    designs.check(
        source,
        'agent "a" cannot export existing toolset "records": an agent exports tools it runs, '
        'defined in place with Export("name", body); to share toolset "records", export it '
        "from a Service body instead",
        'agent "a" cannot export existing toolset "records"',
    )
    # A service still exports an existing toolset.
    with_service_export = designs.load(
        """
with Toolset("records") as Records:
    Tool("lookup", "Look up.")
with Service("svc"):
    Export(Records)
    Agent("a", "A.", lambda: Export("ask", lambda: Tool("ask", "Ask the agent.")))
"""
    )
    assert [e.toolset.name for e in with_service_export.services[0].exports if e.toolset] == [
        "records"
    ]


def test_a_service_export_exports_the_whole_toolset(designs: DesignRunner) -> None:
    # The exporting service owns the toolset's one package, which holds every tool (and
    # PublishTo publishes them all): a Tool("name") selection here was accepted and ignored.
    errors = designs.check(
        """
Company = Registry("company", lambda: URL("https://registry.example"))
with Toolset("records") as Records:
    Tool("lookup", "Look up.")
    Tool("search", "Search.")
with Service("svc"):
    Agent("a", "A.", lambda: Use(Records, lambda: Tool("lookup")))
    with Export(Records):
        PublishTo(Company)
        Tool("search")  # <-
""",
        'service "svc" exports the whole toolset "records": its package holds every tool, and '
        "a selection here would be ignored; remove the Tool(...) selection, and select tools "
        'where they are used: Use(Records, lambda: Tool("search"))',
    )
    assert errors[0].where == 'service "svc" › Export(records)'


def test_a_toolset_is_exported_by_one_service(designs: DesignRunner) -> None:
    # The first exporter owns the package and the registration name ("first.records"); the
    # other service's Export was silently ignored.
    errors = designs.check(
        """
Records = Toolset("records", lambda: Tool("lookup", "Look up."))
with Service("first"):
    Export(Records)
with Service("second"):
    Export(Records)  # <-
    Agent("a", "A.", lambda: Use(Records))
with Service("third"):
    Agent("b", "B.", lambda: Use(Records))
""",
        'toolset "records" is already exported by service "first" (at ',
    )
    assert str(errors[0]).endswith(
        ':5), which owns its package and registers it as "first.records"; a toolset is '
        'exported by one service: remove this Export (agents of service "second" can use it '
        "all the same)"
    )
    assert [loc.line for loc in errors[0].related] == [5]


def test_a_subset_keeps_the_pagination_partner(designs: DesignRunner) -> None:
    designs.check(
        MODELS
        + """
with Toolset("records") as Records:
    with Tool("search", "Search records."):
        Args(Query)
        Return(Page)
        BoundedResult(lambda: (Cursor("cursor"), NextCursor("next_cursor"), ContinueWith("more")))
    with Tool("more", "More results."):
        Args(Query)
        Return(Page)
        BoundedResult(lambda: (Cursor("cursor"), NextCursor("next_cursor")))
    Tool("lookup", "Look up.")
with Service("svc"):
    Agent("a", "A.", lambda: Use(Records, lambda: (Tool("search"), Deferred())))  # <-
    Agent("b", "B.", lambda: Use(Records, lambda: (Tool("search"), Tool("more"))))
    Agent("c", "C.", lambda: Use(Records, lambda: Tool("lookup")))
    Agent("d", "D.", lambda: Use(Records))
""",
        'this Use selects tool "search" of toolset "records" without "more", the tool that '
        'fetches its further pages (ContinueWith("more")); add Tool("more") to the selection',
    )


def test_use_of_a_name_where_the_toolset_object_was_meant(designs: DesignRunner) -> None:
    errors = designs.check(
        """
Tickets = Toolset("tickets", lambda: Tool("get", "Get a ticket."))
with Service("svc"):
    Agent("a", "A.", lambda: Use("tickets"))  # <-
    Agent("b", "B.", lambda: Use(Tickets))
""",
        'Use("tickets") defines a new toolset named "tickets" in place, but toolset "tickets" is '
        "already defined at",
    )
    message = str(errors[0])
    assert (
        "to consume it, pass the value Toolset(...) returned, not its name: Tickets = Toolset("
        '"tickets", ...), then Use(Tickets)'
    ) in message
    assert "declares no tools" not in message


def test_use_of_a_misspelt_name_where_the_toolset_object_was_meant(designs: DesignRunner) -> None:
    designs.check(
        """
Tickets = Toolset("tickets", lambda: Tool("get", "Get a ticket."))
with Service("svc"):
    Agent("a", "A.", lambda: Use("tikcets"))  # <-
    Agent("b", "B.", lambda: Use("notes"))  # <-
""",
        # The misspelling first: adding tools is not the fix.
        'Use("tikcets") defines a new toolset "tikcets" in place, which declares no tools; did '
        'you mean toolset "tickets"? To consume it, pass the value Toolset(...) returned: '
        "Use(Tickets)",
        # Nothing close: a toolset defined in place that lacks its tools.
        'toolset "notes": toolset declares no tools; add Tool(...) to its body',
    )


def test_non_ascii_names_get_a_transliterated_suggestion(designs: DesignRunner) -> None:
    designs.check(
        """
Toolset("größe", lambda: Tool("x", "X."))  # <-
with Toolset("ok"):
    Tool("café_menu", "Menu.")  # <-
Service("東京")  # <-
""",
        'toolset name "größe" must be a lower snake_case ASCII identifier (a-z, 0-9, _; starting '
        "with a letter: names become Python packages, tool IDs and provider tool names); try "
        '"grosse"',
        'tool name "café_menu" must be a lower snake_case ASCII identifier',
        'service name "東京" must be a lower snake_case ASCII identifier',
    )
    errors = designs.errors('Toolset("café_menu", lambda: Tool("x", "X."))')
    assert 'try "cafe_menu"' in str(errors[0])
    errors = designs.errors('Service("東京")')
    assert 'try "dong_jing"' in str(errors[0])
