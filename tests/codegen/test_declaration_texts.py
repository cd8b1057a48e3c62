"""Texts a published toolset's registry declaration refuses are design errors at the tool.

``declarations.tool_schemas()`` and ``toolset()`` of a generated package validate with the
runtime's declaration models, and the provider of a ``PublishTo`` toolset publishes them. A
title on two lines, a tag with a tab or a description with an escape sequence used to pass
``agentgen gen``; the generated package then raised a bare pydantic ``ValidationError`` when
the provider started.
"""

from __future__ import annotations

from agentgen.codegen.pipeline import check_file
from tests.conftest import DesignRunner


def test_declaration_texts_the_runtime_refuses_are_design_errors(designs: DesignRunner) -> None:
    errors = designs.check(
        """
from pydantic import BaseModel, Field

class Note(BaseModel):
    text: str = Field(description="an escape \\x1b[31m here")

class Trace(BaseModel):
    steps: list[str]

Company = Registry("company", lambda: URL("https://registry.example"))
with Toolset("records") as Records:  # <-
    Description("A bell \\x07 here.")
    PublishTo(Company)
    with Tool("lookup", "Look up."):  # <-
        Title("two\\nlines")
        Tags("a\\ttab")
        RequiredLabels("ten\\nant")
        ServerData("tr\\nace", Trace, "The trace.")
    Tool("note", "Add a note \\u202e.", lambda: Args(Note))  # <-
    Tool("long", "Long.", lambda: Title("x" * 257))  # <-
    Tool("fine", "Lines\\nand\\ttabs are fine in descriptions.", lambda: Title("x" * 256))
with Service("svc"):
    Agent("a", "A.", lambda: Use(Records))
""",
        'toolset "records": the registry declaration generated for toolset "records" would be '
        "refused when the generated package builds it (declarations.tool_schemas() and "
        "toolset(), what PublishTo publishes): description 'A bell \\x07 here.': must not "
        "contain control or format character '\\x07'",
        "tags.0 'a\\ttab': must not contain control or format character '\\t'; title "
        "'two\\nlines': must not contain control or format character '\\n'; required_labels.0 "
        "'ten\\nant': must not contain control or format character '\\n'; server_data.0.kind "
        "'tr\\nace': must not contain control or format character '\\n'",
        "description 'Add a note \\u202e.': must not contain control or format character "
        "'\\u202e'; payload.fields.0.description 'an escape \\x1b[31m here': must not contain "
        "control or format character '\\x1b'",
        "title 'xxxxxxxx",
    )
    assert "String should have at most 256 characters" in str(errors[-1])


def test_an_unpublished_toolset_keeps_any_text(designs: DesignRunner) -> None:
    # Its specs write every text as an escape; nothing validates it as a declaration.
    checked = check_file(
        designs.write(
            """
with Toolset("notes") as Notes:
    Description("A bell \\x07 here.")
    Tool("add", "Add \\x1b[31m.", lambda: (Title("two\\nlines"), Tags("a\\ttab")))
with Service("svc"):
    Agent("a", "A.", lambda: Use(Notes))
"""
        )
    )
    assert checked.errors == ()
