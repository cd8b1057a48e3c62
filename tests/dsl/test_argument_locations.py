"""An error about one argument of a DSL call carets that argument, not the whole call.

With several arguments, which one was at fault was left to the message; in a call spanning
lines the error named the call's first line, not the argument's."""

from __future__ import annotations

from agentgen.codegen.diagnostics import excerpt
from agentgen.dsl.errors import DesignError
from tests.conftest import DesignRunner


def carets(errors: list[DesignError]) -> list[tuple[int, str]]:
    """(line, the text under the caret) of each error."""
    shown: list[tuple[int, str]] = []
    for error in errors:
        source, marks = excerpt(error)
        start = marks.index("^")
        shown.append((error.loc.line, source[start : start + marks.count("^")]))
    return shown


def test_each_error_carets_the_argument_it_is_about(designs: DesignRunner) -> None:
    errors = designs.errors(
        """
from pydantic import BaseModel


class Note(BaseModel):
    text: str


def records() -> None:
    Tool("Lookup", "Look up a record.")
    Tool("search", "")
    Tool("tag", "Tag a record.", lambda: Tags("urgent", "urgent"))
    Tool(
        "show",
        "Show a record.",
        lambda: ServerData("note", Note, audience="screen"),
    )


Records = Toolset("records", records)
Other = Toolset(FromRegistry(None, "other"))
with Service("svc"):
    with Agent("a", "A."):
        Use(Records, lambda: Deferred("tag", "serach"))
        RunPolicy(lambda: DenyTags("urgent", "urgent"))
"""
    )
    assert carets(errors) == [
        (11, '"Lookup"'),
        (12, '""'),
        (13, '"urgent"'),  # the repeat, not the first
        (17, 'audience="screen"'),
        (22, "None"),
        (25, '"serach"'),
        (26, '"urgent"'),
    ]
    assert errors[2].loc.col > excerpt(errors[2])[0].index('"urgent"') + 4  # the second one


def test_an_argument_that_cannot_be_told_carets_the_whole_call(designs: DesignRunner) -> None:
    # Passed through *args: which value lands where is known only at run time.
    errors = designs.errors(
        """
settings = (500, "1s", "2s")
with Registry("company"):
    URL("https://registry.example")
    Retry(*settings)
"""
    )
    assert carets(errors) == [(6, "Retry(*settings)")]


def test_a_duplicate_name_carets_the_name(designs: DesignRunner) -> None:
    errors = designs.errors(
        """
with Toolset("records") as Records:
    Tool("lookup", "Look up.")
    Tool("lookup", "Look up again.")
with Service("svc"):
    Agent("a", "A.", lambda: Use(Records))
    Agent(
        "a",
        "Again.",
    )
"""
    )
    assert carets(errors) == [(5, '"lookup"'), (9, '"a"')]


def test_a_caret_after_non_ascii_text_sits_under_its_argument(designs: DesignRunner) -> None:
    # Python reports columns in UTF-8 bytes: after "größe" the caret sat two characters right.
    errors = designs.errors(
        """
Records = Toolset("records", lambda: Tool("größe", "Größe.", lambda: Tags("a", "a")))
"""
    )
    assert carets(errors) == [(3, '"größe"'), (3, '"a"')]
    assert excerpt(errors[1])[1].index("^") == excerpt(errors[1])[0].rindex('"a"')
