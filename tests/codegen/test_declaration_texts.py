"""Texts a toolset's registry declaration refuses are design errors at the tool.

``declarations.tool_schemas()`` and ``toolset()`` of every generated toolset package validate
with the runtime's declaration models, and the provider of a ``PublishTo`` toolset publishes
them. A title on two lines, a tag with a tab or a description with an escape sequence used to
pass ``agentgen gen``; the generated package then raised a bare pydantic ``ValidationError``
when the provider started, or when an unpublished toolset's declarations were asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentgen.codegen.builders import toolsets as toolset_builder
from agentgen.codegen.pipeline import model_of
from tests.codegen.helpers import generated_module
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


def test_an_unpublished_toolset_is_held_to_the_same_texts(designs: DesignRunner) -> None:
    # Its package has declarations.tool_schemas() and toolset() all the same: they raised
    # pydantic's ValidationError when called, though the design passed `agentgen gen`.
    designs.check(
        """
with Toolset("notes") as Notes:  # <-
    Description("A bell \\x07 here.")
    Tool("add", "Add \\x1b[31m.", lambda: (Title("two\\nlines"), Tags("a\\ttab")))  # <-
with Service("svc"):
    with Agent("a", "A."):
        Use(Notes)
        Export("ask", lambda: Tool("ask", "Ask \\u202e.", lambda: Title("x" * 257)))  # <-
""",
        'toolset "notes": the registry declaration generated for toolset "notes" would be '
        "refused when the generated package builds it (declarations.tool_schemas() and "
        "toolset(), what PublishTo publishes): description 'A bell \\x07 here.': must not "
        "contain control or format character '\\x07'; in every toolset, titles, tags",
        "description 'Add \\x1b[31m.': must not contain control or format character '\\x1b'; "
        "tags.0 'a\\ttab': must not contain control or format character '\\t'; title "
        "'two\\nlines': must not contain control or format character '\\n'",
        "description 'Ask \\u202e.': must not contain control or format character '\\u202e'",
    )


def test_every_generated_toolset_builds_its_declarations(
    designs: DesignRunner, tmp_path: Path
) -> None:
    # Local, external MCP and agent-exported toolsets, none published, with every text the
    # declarations keep: line breaks and tabs in descriptions, 256-character titles, any script
    # (the zero-width non-joiner Persian spells with, an emoji joined with the joiner).
    design = designs.write(
        """
from pydantic import BaseModel, Field

class Note(BaseModel):
    text: str = Field(description="Several\\nlines,\\ttabbed.")

with Toolset("notes") as Notes:
    Description("Notes: första\\nrad. \u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645")
    Tags("ünïcode", "\U0001f9d1\u200d\U0001f4bb")
    Tool("add", "Add a note.\\n\\tIndented.", lambda: (Args(Note), Title("x" * 256)))
    Tool("pin", "Pin a note.", lambda: (Args(Note), Title("\U0001f9d1\u200d\U0001f4bb Pin")))
with Toolset("files", FromExternalMCP("fs", "files")) as Files:
    Tool("read", "Read\\na file.", lambda: Args({"type": "object"}))
with Service("svc"):
    with Agent("a", "A."):
        Use(Notes)
        Use(Files)
        Export("ask", lambda: Tool("ask", "Ask\\r\\nme."))
"""
    )
    names = {"notes": "svc.notes", "files": "svc.files", "ask": "svc.ask"}
    for toolset, registration in names.items():
        with generated_module(
            design, tmp_path / toolset, "gen", f"svc.toolsets.{toolset}.declarations"
        ) as declarations:
            full = declarations.toolset()
            assert full.name == registration
            assert [t.model_dump() for t in full.tools] == [
                t.model_dump() for t in declarations.tool_schemas()
            ]
            assert declarations.schema_fingerprint() == declarations.SCHEMA_FINGERPRINT
    assert full.tools[0].description == "Ask\r\nme."


def test_each_tool_declaration_is_built_once_for_the_check_and_the_model(
    designs: DesignRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The checker validates every tool's declaration and the model fingerprints the same
    # declarations: each was built twice, the larger part of what checking every toolset
    # added to `agentgen validate` of a design of thousands of tools.
    built: list[str] = []
    declaration = toolset_builder.tool_schema_json

    def counted(**fields: Any) -> dict[str, Any]:
        built.append(fields["tool_id"])
        return declaration(**fields)

    monkeypatch.setattr(toolset_builder, "tool_schema_json", counted)
    design = designs.write(
        """
with Toolset("notes") as Notes:
    Tool("add", "Add a note.")
    Tool("remove", "Remove a note.")
with Service("svc"):
    with Agent("a", "A."):
        Use(Notes)
        Export("ask", lambda: Tool("ask", "Ask me."))
"""
    )
    model = model_of(design)
    assert sorted(built) == ["ask.ask", "notes.add", "notes.remove"]
    (service,) = model.services
    assert {toolset.name: len(toolset.fingerprint) for toolset in service.toolsets} == {
        "notes": 64,
        "ask": 64,
    }


def test_declaration_texts_are_checked_beside_other_errors(designs: DesignRunner) -> None:
    # They were checked only on a design without any other error: a user who fixed a refused
    # toolset body and a misspelt Deferred then met a title with a newline in another toolset,
    # which the first run could have reported.
    designs.check(
        """
Broken = Toolset("broken", "Tool('x', 'X.')")  # <-
with Toolset("notes") as Notes:
    Tool("add", "Add a note.", lambda: Title("Add\\na note"))  # <-
with Toolset("odd") as Odd:
    Tool("Find", "Find\\x1b notes.")  # <-
    Tool("keep", "Keep\\x1b it.")
with Service("svc"):
    Agent("a", "A.", lambda: Use(Notes, lambda: Deferred("ad")))  # <-
""",
        "Toolset accepts one name, got 2",
        'the registry declaration generated for "notes.add" would be refused',
        # A toolset with an error of its own is not declaration-checked: built from what the
        # design got right, it says nothing sure (its other texts are checked once fixed).
        'tool name "Find" must be a lower snake_case identifier',
        'Deferred selects unknown tool "ad"',
    )
