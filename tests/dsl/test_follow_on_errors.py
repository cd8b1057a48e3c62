"""One mistake, one error: what a refused declaration leaves out is not reported again.

A tool whose name is refused, an ``Args`` or ``Cursor`` or ``URL`` refused for its argument, a
body passed as something else: each is reported where it was written. Later references to
what was refused used to come out as mistakes of their own ("unknown tool", "needs the tool to
declare Args", "URL is required", "declares no tools", a policy tag "no tool carries"), which
sent the reader to fix lines that were right.
"""

from __future__ import annotations

from tests.conftest import DesignRunner

MODELS = """
from pydantic import BaseModel
class Query(BaseModel):
    q: str
    cursor: str | None = None
class Page(BaseModel):
    ids: list[str]
    next_cursor: str | None = None
"""


def test_references_to_a_tool_whose_name_was_refused_are_not_unknown_tools(
    designs: DesignRunner,
) -> None:
    designs.check(
        MODELS
        + """
with Toolset("records") as Records:
    with Tool("search", "Search."):
        Args(Query)
        Return(Page)
        with BoundedResult():
            Cursor("cursor")
            NextCursor("next_cursor")
            ContinueWith("More")
    Tool("More", "More.", lambda: (Args(Query), Return(Page)))  # <-
    Tool("Tagged", "Tagged.", lambda: Tags("finance"))  # <-
with Service("svc"):
    Agent("a", "A.", lambda: Use(Records, lambda: (Tool("search"), Tool("More"))))
    Agent("b", "B.", lambda: Use(Records, lambda: Deferred("More")))
    with Agent("c", "C."):
        Use(Records)
        RunPolicy(lambda: AllowTags("finance"))
    Agent("d", "D.", lambda: Use(Records, lambda: (Tool("search"), Tool("nope"))))  # <-
""",
        'tool name "More" must be a lower snake_case identifier',
        'tool name "Tagged" must be a lower snake_case identifier',
        # A name no declaration had is still unknown.
        'selects unknown tool "nope" of toolset "records" (its tools: search)',
    )


def test_settings_refused_for_their_argument_are_not_reported_missing(
    designs: DesignRunner,
) -> None:
    designs.check(
        MODELS
        + """
with Toolset("records") as Records:
    with Tool("search", "Search."):
        Args({"type": "object"})  # <-
        Return(Page)
        with BoundedResult():
            Cursor("cursor")
            NextCursor("next_cursor")
        with Confirmation():
            PromptTemplate("Search {{ q }}?")
            DeniedResultTemplate(None)  # <-
    with Tool("list", "List."):
        Args(Query)
        Return(Page)
        with BoundedResult():
            Cursor(1)  # <-
            NextCursor("next_cursor")
            ContinueWith("more")
    with Tool("more", "More."):
        Args(Query)
        Return(Page)
        with BoundedResult():
            Cursor(None)  # <-
            NextCursor("next_cursor")
Company = Registry("company", lambda: URL(8443))  # <-
with Service("svc"):
    Agent("a", "A.", lambda: Use(Records))
""",
        "Args takes a pydantic model class; JSON Schema dicts are only accepted",
        "DeniedResultTemplate template must be a string, got NoneType",
        "Cursor field name must be a string, got int",
        "Cursor field name must be a string, got NoneType",
        "URL url must be a string, got int",
    )


def test_a_body_passed_as_something_else_is_not_reported_as_an_empty_toolset(
    designs: DesignRunner,
) -> None:
    designs.check(
        """
Records = Toolset("records", "Tool('lookup', 'Look up.')")  # <-
with Toolset("notes", 5):  # <- <-
    pass
with Service("svc"):
    Agent("a", "A.", lambda: Use(Records, lambda: (Tool("lookup"), Deferred("lookup"))))
    with Agent("b", "B."):
        Export("ask", "Tool('ask', 'Ask.')")  # <-
""",
        "Toolset accepts one name, got 2",
        # A with block ran after all: that body is empty.
        'toolset "notes": toolset declares no tools',
        # Under the 5 (the argument at fault), so after the toolset's own error on its line.
        "Toolset takes a name, a source (FromRegistry/FromExternalMCP) and a body; got int",
        "Export takes a toolset or name, and an optional body; got 1 extra argument(s)",
    )


def test_a_use_by_name_of_a_refused_toolset_says_which_one_it_meant(
    designs: DesignRunner,
) -> None:
    # It said "toolset declares no tools; add Tool(...) to its body": the tools are declared,
    # in the Toolset whose source was refused.
    designs.check(
        """
with Toolset("records", FromRegistry(None, "records")):  # <-
    pass
with Toolset("Notes") as Notes:  # <-
    Tool("add", "Add.")
with Service("svc"):
    Agent("a", "A.", lambda: Use("records"))  # <-
    Agent("b", "B.", lambda: Use("notes"))  # <-
""",
        "FromRegistry requires a Registry(...) expression, got None",
        'toolset name "Notes" must be a lower snake_case identifier',
        'Use("records") defines a new toolset named "records" in place, but toolset "records" '
        "is already defined at ",
        'Use("notes") defines a new toolset "notes" in place, which declares no tools; did you '
        'mean toolset "Notes"? To consume it, pass the value Toolset(...) returned: Use(Notes)',
    )


def test_a_toolset_whose_source_was_refused_is_not_held_to_a_local_toolsets_rules(
    designs: DesignRunner,
) -> None:
    # FromExternalMCP refused for its service: the toolset became a local one, so its tools'
    # JSON Schemas, dashed names and MCPName were each reported as a second mistake.
    designs.check(
        """
with Toolset("files", FromExternalMCP(None, "files")):  # <-
    with Tool("read-file", "Read a file."):
        Args({"type": "object"})
        MCPName("files.read")
Toolset(5, lambda: Tool("x", "X."))  # <-
""",
        "FromExternalMCP service must be a string, got NoneType",
        # Not "toolset name cannot be empty" too: the name was given, as an int.
        "Toolset takes a name, a source (FromRegistry/FromExternalMCP) and a body; got int",
    )


def test_a_setting_given_again_after_a_refused_one_is_a_repeat(designs: DesignRunner) -> None:
    # A refused first setting left no trace, so its repeat was taken without a word: it came
    # out only in a later run, once the first was fixed (on a line nobody had to touch).
    designs.check(
        MODELS
        + """
with Toolset("mcp", FromExternalMCP("srv", "http://127.0.0.1:1/mcp")):
    with Tool("find", "Find."):
        MCPName("")  # <-
        MCPName("files.find")  # <-
with Toolset("records") as Records:
    with Tool("search", "Search."):
        Title("")  # <-
        Title("Search")  # <-
        Args(int)  # <-
        Args(Query)  # <-
        Return(int)  # <-
        Return(Page)  # <-
        with Confirmation():
            PromptTemplate("")  # <-
            PromptTemplate("Search?")  # <-
            DeniedResultTemplate("")  # <-
            DeniedResultTemplate("Denied.")  # <-
        with BoundedResult():
            Cursor("")  # <-
            Cursor("cursor")  # <-
            NextCursor("")  # <-
            NextCursor("next_cursor")  # <-
            ContinueWith("")  # <-
            ContinueWith("search")  # <-
    Description("")  # <-
    Description("Records.")  # <-
""",
        'MCPName "" is not an MCP tool name',
        'MCPName is already set for tool "find" (line 13); keep one',
        "Title text cannot be empty",
        'Title is already set for tool "search" (line 17); keep one',
        "Args takes a pydantic model class (a BaseModel subclass), got int",
        'Args is already set for tool "search" (line 19); keep one',
        "Return takes a pydantic model class (a BaseModel subclass), got int",
        'Return is already set for tool "search" (line 21); keep one',
        "PromptTemplate template cannot be empty",
        "PromptTemplate is already set for this Confirmation (line 24); keep one",
        "DeniedResultTemplate template cannot be empty",
        "DeniedResultTemplate is already set for this Confirmation (line 26); keep one",
        "Cursor field name cannot be empty",
        "Cursor is already set for this BoundedResult (line 29); keep one",
        "NextCursor field name cannot be empty",
        "NextCursor is already set for this BoundedResult (line 31); keep one",
        "ContinueWith tool name cannot be empty",
        "ContinueWith is already set for this BoundedResult (line 33); keep one",
        "Description text cannot be empty",
        'description of toolset "records" is already set (line 35); keep one',
    )


def test_a_policy_over_tools_selected_by_name_is_checked_beside_a_refused_tool(
    designs: DesignRunner,
) -> None:
    # A refused tool of the toolset silenced every policy check of every agent using it, also
    # of one that selects only tools that are there: its policy hid them all, unreported.
    designs.check(
        """
with Toolset("records") as Records:
    Tool("search", "Search.", lambda: Tags("read"))
    Tool("Lost", "Lost.", lambda: Tags("write"))  # <-
with Service("svc"):
    with Agent("a", "A."):
        Use(Records, lambda: Tool("search"))
        RunPolicy(lambda: DenyTags("read"))  # <-
    with Agent("b", "B."):
        Use(Records, lambda: Tool("search"))
        RunPolicy(lambda: AllowTags("wrte"))  # <-
    with Agent("c", "C."):
        Use(Records)
        RunPolicy(lambda: AllowTags("write"))
    with Agent("d", "D."):
        Use(Records, lambda: (Tool("search"), Tool("Lost")))
        RunPolicy(lambda: AllowTags("write"))
""",
        'tool name "Lost" must be a lower snake_case identifier',
        'the RunPolicy of agent "svc.a" hides every tool the agent uses',
        'AllowTags names tag "wrte", which no tool of agent "svc.b" carries (their tags: read)',
    )


def test_a_policy_over_a_whole_toolset_is_checked_on_what_is_left_of_it(
    designs: DesignRunner,
) -> None:
    # A Use of the whole toolset skipped every policy check once one of its tools was refused:
    # a policy hiding every tool that is left, or naming a tag nothing carries, passed
    # unreported. The refused tool's own tags count (its body ran): a tag only it carries, or
    # a policy it passes, is no mistake of the policy's.
    designs.check(
        """
with Toolset("records") as Records:
    Tool("search", "Search.", lambda: Tags("read"))
    Tool("Lost", "Lost.", lambda: Tags("write"))  # <-
with Service("svc"):
    with Agent("a", "A."):
        Use(Records)
        RunPolicy(lambda: DenyTags("read", "write"))  # <-
    with Agent("b", "B."):
        Use(Records)
        RunPolicy(lambda: AllowTags("wrte"))  # <-
    with Agent("c", "C."):
        Use(Records)
        RunPolicy(lambda: (AllowTags("write"), DenyTags("read")))
    with Agent("d", "D."):
        Use(Records, lambda: Tool("Lost"))
        RunPolicy(lambda: AllowTags("write"))
""",
        'tool name "Lost" must be a lower snake_case identifier',
        'the RunPolicy of agent "svc.a" hides every tool the agent uses, so its model would see '
        "none: records.search (tags: read); loosen AllowTags/DenyTags",
        'AllowTags names tag "wrte", which no tool of agent "svc.b" carries (their tags: read, '
        'write); did you mean "write"?',
    )


def test_deferred_of_a_refused_tool_the_use_does_not_select_is_reported(
    designs: DesignRunner,
) -> None:
    # Deferred("Lost") was skipped because "Lost" was refused, though the Use selects only
    # "search": the Deferred stays a mistake once the tool is fixed. A Use of the whole
    # toolset, or naming the refused tool, still says nothing more about it.
    designs.check(
        """
with Toolset("records") as Records:
    Tool("search", "Search.")
    Tool("fetch", "Fetch.")
    Tool("Lost", "Lost.")  # <-
with Service("svc"):
    Agent("a", "A.", lambda: Use(Records, lambda: (Tool("search"), Deferred("Lost"))))  # <-
    Agent("b", "B.", lambda: Use(Records, lambda: Deferred("Lost")))
    Agent("c", "C.", lambda: Use(Records, lambda: (Tool("fetch"), Tool("Lost"), Deferred("Lost"))))
    with Agent("d", "D."):
        Use(Records, lambda: (Tool("search"), Tool("a b"), Deferred("Lost")))  # <-
""",
        'tool name "Lost" must be a lower snake_case identifier',
        'agent "svc.a" toolset "records": Deferred selects tool "Lost", which this Use does not '
        "include (it includes: search)",
        'tool name "a b"',
    )


def test_a_description_given_in_the_tool_call_and_again_names_that_line(
    designs: DesignRunner,
) -> None:
    # It said only "is already set", without the line of the first nor what to do.
    designs.check(
        """
with Toolset("records"):
    with Tool("search", "Search."):
        Description("Search records.")  # <-
""",
        'description of tool "search" is already set (line 4); keep one',
    )
