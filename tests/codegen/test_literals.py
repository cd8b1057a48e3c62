"""Every text of a design reaches generated code as a literal that imports and round-trips, or
is refused at design time with its line.

Control characters (NUL included), Unicode line and paragraph separators, invisible format
characters and very long strings are written as escapes where they would otherwise break a
Python source, a comment or a docstring; lone surrogates, which no UTF-8 file, JSON document or
provider request can carry, are design errors.
"""

from __future__ import annotations

import ast
import importlib
import math
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from pydantic import ValidationError

from agentgen.codegen.loader import UserCodeError
from agentgen.codegen.pipeline import check_file, generate
from agentgen.codegen.render import py
from tests.codegen.helpers import importable as on_path
from tests.conftest import DesignRunner

#: Every C0 control character, DEL, every C1 control character, and the separators and format
#: characters Python's str.splitlines() or editors treat as line breaks or hide.
CONTROLS = "".join(chr(c) for c in [*range(0x20), *range(0x7F, 0xA0)]) + "\u2028\u2029\u200b\ufeff"
TEXT = f'Look{CONTROLS}up "quoted" \'single\' \\ back\\slash """ triple'
#: What registry declarations keep (every toolset's ``declarations.tool_schemas()`` builds
#: them): descriptions hold line breaks but no other control or format character, titles,
#: tags and labels none at all; the separators and the quoting are still there to escape.
PROSE = 'Look\t\n\r\u2028\u2029up "quoted" \'single\' \\ back\\slash """ triple'
LINE = 'Look\u2028\u2029up "quoted" \'single\' \\ back\\slash """ triple'
LONG = "word " * 40_000


@pytest.fixture
def importable(tmp_path: Path) -> Iterator[Path]:
    with on_path(tmp_path):
        yield tmp_path


def test_control_characters_and_long_strings_round_trip(
    designs: DesignRunner, importable: Path
) -> None:
    design = designs.write(
        f"""
import enum
from pydantic import BaseModel, Field

TEXT = {TEXT!r}
PROSE = {PROSE!r}
LINE = {LINE!r}
LONG = {LONG!r}

class Kind(str, enum.Enum):
    ODD = TEXT

class Note(BaseModel):
    {TEXT!r}
    text: str = Field(default=TEXT, description=PROSE, title=TEXT, examples=[TEXT])
    kind: Kind = Kind.ODD

with Toolset("notes") as Notes:
    Description(PROSE)
    Tags(LINE)
    with Tool("add", PROSE):
        Title(LINE)
        Args(Note)
        Return(Note)
        RequiredLabels(LINE)
        with Confirmation():
            PromptTemplate(TEXT)
            DeniedResultTemplate(TEXT)
    Tool("long", "Long.")

with Service("svc"):
    Agent("a", TEXT, lambda: Use(Notes))
    Agent("b", LONG, lambda: Use(Notes))
"""
    )
    result = generate(design, importable / "literals_gen")
    assert not result.errors, result.errors
    for path, text in result.contents:
        assert "\x00" not in text, path
        if path.endswith(".py"):
            ast.parse(text, path)  # raises on a broken literal
            assert all(ch.isprintable() or ch in "\n\t" for ch in text), path

    specs = importlib.import_module("literals_gen.svc.toolsets.notes.specs")
    types = importlib.import_module("literals_gen.svc.toolsets.notes.types")
    agent = importlib.import_module("literals_gen.svc.agents.a.agent")
    importlib.import_module("literals_gen.svc.toolsets.notes.executor")
    declarations = importlib.import_module("literals_gen.svc.toolsets.notes.declarations")
    add = specs.ADD_SPEC
    assert (add.description, add.title, specs.DESCRIPTION) == (PROSE, LINE, PROSE)
    assert add.tags == (LINE,) and add.required_labels == (LINE,)
    assert add.confirmation.prompt_template == TEXT
    assert agent.DESCRIPTION == TEXT
    assert importlib.import_module("literals_gen.svc.agents.b.agent").DESCRIPTION == LONG
    field = types.Note.model_fields["text"]
    assert (field.default, field.description, field.title, field.examples) == (
        TEXT, PROSE, TEXT, [TEXT],
    )  # fmt: skip
    assert types.Kind.ODD.value == TEXT
    # The generated model is the contract: its schema (docstring included) is the design's.
    schema = types.Note.model_json_schema(mode="validation")
    assert {"$schema": add.payload.schema()["$schema"], **schema} == add.payload.schema()
    assert add.payload.schema()["properties"]["text"]["description"] == PROSE
    # And the declarations of the toolset build, with every text as written.
    (declared, _) = declarations.toolset().tools
    assert (declared.description, declared.tags) == (PROSE, [LINE])
    assert declared.consumer_contract and declared.consumer_contract.title == LINE


@pytest.mark.parametrize("ending", ['"', '""', '\\"', '"""'])
def test_a_description_ending_in_a_quote_stays_inside_its_docstring(
    designs: DesignRunner, tmp_path: Path, ending: str
) -> None:
    # The agent package's docstring puts the description on one line, right before the
    # closing quotes: a final quote once made it four in a row and broke the module.
    text = f"Says {ending}"
    design = designs.write(
        f"""
with Toolset("notes") as Notes:
    Tool("add", {text!r})
with Service("svc"):
    Agent("a", {text!r}, lambda: Use(Notes))
"""
    )
    result = generate(design, tmp_path / "quotes_gen")
    assert not result.errors, result.errors
    init = dict(result.contents)["svc/agents/a/__init__.py"]
    docstring = ast.get_docstring(ast.parse(init), clean=False)
    assert docstring is not None and docstring.rstrip().endswith(ending.replace('"""', "'''"))


def test_lone_surrogates_are_refused_with_the_line(designs: DesignRunner) -> None:
    designs.check(
        """
from pydantic import BaseModel, Field
class Note(BaseModel):
    text: str = Field(description="half \\ud800 a pair")
with Toolset("notes") as Notes:
    Tool("add", "Add \\udfff.")  # <-
    Tool("edit", "Edit.", lambda: Args(Note))  # <-
with Service("svc"):
    Agent("a", "A.", lambda: Use(Notes))
""",
        "Tool description contains a lone surrogate (U+DFFF at index 4), which no UTF-8 file, "
        "JSON document or provider request can carry; remove it",
        "Args model Note: its JSON Schema contains a lone surrogate (U+D800) at "
        "/properties/text/description",
    )


def test_a_lone_surrogate_in_a_server_data_kind_is_refused_with_the_line(
    designs: DesignRunner,
) -> None:
    # The kind is written into the generated specs and the registry declaration: it once
    # passed validation and failed writing the generated files (UnicodeEncodeError).
    designs.check(
        """
from pydantic import BaseModel
class Receipt(BaseModel):
    id: int
with Toolset("notes") as Notes:
    Tool("add", "Add.", lambda: ServerData("receipt\\ud800", Receipt))  # <-
with Service("svc"):
    Agent("a", "A.", lambda: Use(Notes))
""",
        "ServerData kind contains a lone surrogate (U+D800 at index 7), which no UTF-8 file, "
        "JSON document or provider request can carry; remove it",
    )


def test_a_docstring_python_cannot_store_is_the_design_s_error(designs: DesignRunner) -> None:
    # Python itself refuses a class whose docstring holds a lone surrogate, inside
    # <frozen abc>: the design's error at its line, not "agentgen internal error".
    design = designs.write(
        """
from pydantic import BaseModel
class Note(BaseModel):
    \"\"\"Half \\ud800 a pair.\"\"\"
    text: str
"""
    )
    with pytest.raises(UserCodeError) as caught:
        check_file(design)
    message = str(caught.value)
    assert "internal error" not in message
    assert message.startswith("Traceback (most recent call last):\n")
    assert f'File "{design}", line 4, in <module>' in message
    assert message.endswith("UnicodeEncodeError: 'utf-8' codec can't encode character "
                            "'\\ud800' in position 5: surrogates not allowed\n")  # fmt: skip


def test_a_design_file_name_with_odd_characters_stays_a_comment(tmp_path: Path) -> None:
    design = tmp_path / "odd\u2028name.py"
    design.write_text(
        "from agentgen.dsl import *\n"
        'Records = Toolset("records", lambda: Tool("lookup", "Look up."))\n'
        'Service("svc", lambda: Agent("a", "A.", lambda: Use(Records)))\n'
    )
    assert not check_file(design).errors
    result = generate(design, tmp_path / "out")
    for path, text in result.contents:
        if path.endswith(".py"):
            first = text.splitlines()[0]
            assert first.startswith("# Generated by agentgen (hash ")
            assert first.endswith(") from odd\\u2028name.py — do not edit.")
            ast.parse(text, path)


@pytest.mark.parametrize("name", ['my"""design.py', "quote'\"\\.py", "new\nline.py"])
def test_a_design_file_name_with_quotes_stays_inside_the_root_docstring(
    tmp_path: Path, name: str
) -> None:
    # The root package's docstring held the raw name: `my"""design.py` ended it early and gen
    # failed with "bug in agentgen".
    design = tmp_path / name
    design.write_text(
        "from agentgen.dsl import *\n"
        'Records = Toolset("records", lambda: Tool("lookup", "Look up."))\n'
        'Service("svc", lambda: Agent("a", "A.", lambda: Use(Records)))\n'
    )
    result = generate(design, tmp_path / "out")
    root = dict(result.contents)["__init__.py"]
    module = ast.parse(root)
    assert ast.get_docstring(module) == f"Agent packages generated from {name}."


def test_constraint_bounds_of_every_kind_round_trip(
    designs: DesignRunner, importable: Path
) -> None:
    # repr() of these bounds gave `Field(le=inf)`, `Field(ge=Decimal("1.5"))`,
    # `Field(ge=datetime.date(2020, 1, 1))`: names the generated module does not have, so
    # the package failed on import.
    design = designs.write(
        """
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from pydantic import BaseModel, Field

class Window(BaseModel):
    amount: Decimal = Field(ge=Decimal("1.5"), le=Decimal("1E+3"))
    day: date = Field(ge=date(2020, 1, 1))
    until: datetime = Field(lt=datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone.utc))
    opens: time = Field(gt=time(8, 30))
    lasts: timedelta = Field(le=timedelta(hours=2), ge=timedelta(days=-999999, microseconds=7))
    never: timedelta = Field(gt=timedelta(0))
    ratio: float = Field(ge=float("-inf"), le=float("inf"))

with Toolset("windows") as Windows:
    Tool("book", "Book a window.", lambda: Args(Window))

with Service("svc"):
    Agent("a", "Books.", lambda: Use(Windows))
"""
    )
    result = generate(design, importable / "bounds_gen")
    assert not result.errors, result.errors
    types = importlib.import_module("bounds_gen.svc.toolsets.windows.types")
    specs = importlib.import_module("bounds_gen.svc.toolsets.windows.specs")
    fields = types.Window.model_fields
    assert [m.ge for m in fields["amount"].metadata if hasattr(m, "ge")] == [Decimal("1.5")]
    assert [m.ge for m in fields["day"].metadata if hasattr(m, "ge")] == [date(2020, 1, 1)]
    assert [m.lt for m in fields["until"].metadata if hasattr(m, "lt")] == [
        datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    ]
    assert [m.gt for m in fields["opens"].metadata if hasattr(m, "gt")] == [time(8, 30)]
    assert [m.le for m in fields["lasts"].metadata if hasattr(m, "le")] == [timedelta(hours=2)]
    # Exact to the microsecond (a float of seconds is not, this far out).
    assert [m.ge for m in fields["lasts"].metadata if hasattr(m, "ge")] == [
        timedelta(days=-999999, microseconds=7)
    ]
    assert [m.gt for m in fields["never"].metadata if hasattr(m, "gt")] == [timedelta(0)]
    assert [m.le for m in fields["ratio"].metadata if hasattr(m, "le")] == [math.inf]
    schema = types.Window.model_json_schema(mode="validation")
    assert {"$schema": specs.BOOK_SPEC.payload.schema()["$schema"], **schema} == (
        specs.BOOK_SPEC.payload.schema()
    )
    with pytest.raises(ValidationError):
        types.Window(
            amount="2000", day="2021-01-01", until="2029-01-01T00:00:00Z", opens="09:00",
            lasts=60, never=1, ratio=1.0,
        )  # fmt: skip


def test_a_schema_number_json_cannot_write_is_refused_with_the_line(
    designs: DesignRunner,
) -> None:
    # allow_nan=False made this "a bug in agentgen" (ValueError out of the generator).
    designs.check(
        """
from pydantic import BaseModel, Field
class Odd(BaseModel):
    x: float = Field(lt=float("nan"))
with Toolset("notes") as Notes:
    Tool("edit", "Edit.", lambda: Args(Odd))  # <-
with Service("svc"):
    Agent("a", "A.", lambda: Use(Notes))
""",
        "Args model Odd: its JSON Schema cannot be written as JSON: the number nan at "
        "/properties/x/exclusiveMaximum is not finite",
    )


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_a_non_finite_float_is_written_as_python_can_read_it(value: float) -> None:
    # repr() writes `inf` and `nan`, which a generated module would read as undefined names.
    written = py({"bound": value})
    read = eval(written, {"__builtins__": {"float": float}})
    assert math.isnan(read["bound"]) if math.isnan(value) else read["bound"] == value
