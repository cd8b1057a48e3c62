"""Models the generated ``types.py`` once got wrong (found by test_types_property.py), each
reproduced exactly now or refused as a design error on the line that uses it."""

from __future__ import annotations

import importlib
import uuid
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from agentgen.codegen.pipeline import check_file, generate
from tests.codegen.helpers import importable as on_path
from tests.conftest import DesignRunner

TOOLSET = """
with Toolset("notes") as Notes:
    Tool("edit", "Edit.", lambda: Args(Note))
with Service("svc"):
    Agent("a", "A.", lambda: Use(Notes))
"""


@pytest.fixture
def importable(tmp_path: Path) -> Iterator[Path]:
    with on_path(tmp_path):
        yield tmp_path


def generated(designs: DesignRunner, folder: Path, models: str) -> tuple[ModuleType, Any]:
    """The generated ``types`` module of a design whose tool ``edit`` takes ``Note``, and the
    design's own ``Note``."""
    design = designs.write(models + TOOLSET)
    package = f"gen_{designs.count}"
    result = generate(design, folder / package)
    assert not result.errors, [e.format() for e in result.errors]
    types = importlib.import_module(f"{package}.svc.toolsets.notes.types")
    (tool,) = check_file(design).root.toolsets[0].tools
    assert tool.args is not None
    return types, tool.args.value


def refused(designs: DesignRunner, models: str, fragment: str) -> None:
    """Assert that the design whose tool ``edit`` takes ``Note`` is refused on the marked line
    of ``models`` (a field at fault), or else on the ``Args(Note)`` line."""
    toolset = TOOLSET if "# <-" in models else TOOLSET.replace("Args(Note))", "Args(Note))  # <-")
    designs.check(models + toolset, fragment)


def same_schemas(ours: Any, theirs: Any) -> None:
    for mode in ("validation", "serialization"):
        assert ours.model_json_schema(by_alias=True, mode=mode) == theirs.model_json_schema(
            by_alias=True, mode=mode
        )


@pytest.mark.parametrize(
    ("doc", "description"),
    [(" padded ", "padded "), ("  ", "")],
)
def test_a_docstring_keeps_the_description_pydantic_reads(
    designs: DesignRunner, importable: Path, doc: str, description: str
) -> None:
    # The generator wrote doc.strip(): pydantic's description is inspect.cleandoc(doc), which
    # keeps the first line's trailing spaces, and is "" for a docstring of blanks.
    model = f"from pydantic import BaseModel\nclass Note(BaseModel):\n    {doc!r}\n"
    types, note = generated(designs, importable, model)
    assert note.model_json_schema()["description"] == description
    same_schemas(types.Note, note)


def test_a_renamed_class_keeps_its_defs_name(designs: DesignRunner, importable: Path) -> None:
    # A class named like a name types.py uses is written as Any2: its schema's $defs entry was
    # "Any2", not the design's "Any".
    types, note = generated(
        designs,
        importable,
        """
from pydantic import BaseModel
class Any(BaseModel):
    x: int
class Note(BaseModel):
    item: Any
""",
    )
    assert "Any" in types.Note.model_json_schema()["$defs"]
    same_schemas(types.Note, note)


def test_a_constraint_given_twice_is_refused_with_the_line(designs: DesignRunner) -> None:
    # Written as Field(1, gt=-5, gt=0): a SyntaxError in the generated module.
    refused(
        designs,
        """
from typing import Annotated
from pydantic import BaseModel, Field
class Note(BaseModel):
    x: Annotated[int, Field(gt=0)] = Field(1, gt=-5)  # <-
""",
        'Args model Note, field "x": constraint gt is given twice (gt=-5 and gt=0',
    )


def test_unhashable_annotation_metadata_is_refused_with_the_line(designs: DesignRunner) -> None:
    # `tp in _SIMPLE` hashed the annotation: TypeError, "a bug in agentgen".
    refused(
        designs,
        """
from typing import Annotated
from pydantic import BaseModel
class Note(BaseModel):
    x: list[Annotated[int, {"unit": "cm"}]]  # <-
""",
        'Args model Note, field "x": annotation metadata dict is not supported',
    )


def test_an_integer_too_long_for_repr_is_a_design_error(designs: DesignRunner) -> None:
    # repr(10**5000) raises ValueError (sys.get_int_max_str_digits()): "a bug in agentgen".
    refused(
        designs,
        """
from pydantic import BaseModel, Field
class Note(BaseModel):
    x: int = Field(default=10**5000, le=10**5000)
""",
        "Args model Note has no JSON Schema: Exceeds the limit (4300 digits)",
    )


def test_constrained_type_functions_and_odd_literals_are_reproduced(
    designs: DesignRunner, importable: Path
) -> None:
    # conint()/confloat() leave None in their metadata for the constraints not given, and
    # confloat(allow_inf_nan=...) adds AllowInfNan: both were refused. So were Literal[None],
    # Literal of enum members, and Decimal, UUID, date and timedelta defaults.
    types, note = generated(
        designs,
        importable,
        """
import enum, uuid
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Literal
from pydantic import BaseModel, conint, confloat

class Level(str, enum.Enum):
    LOW = "low"
    HIGH = "high"

class Note(BaseModel):
    count: conint(ge=-3, le=2**70) = 0
    ratio: list[confloat(gt=0, allow_inf_nan=False)] = []
    level: Literal[Level.HIGH, None] = None
    amount: Decimal = Decimal("-0.50")
    ref: uuid.UUID = uuid.UUID(int=5)
    day: date = date(2020, 1, 2)
    at: datetime = datetime(2020, 1, 2, 3, 4, 5, 6, tzinfo=timezone.utc)
    opens: time = time(8, 30)
    lasts: timedelta = timedelta(days=-1, microseconds=5)
""",
    )
    same_schemas(types.Note, note)
    defaults = {name: f.default for name, f in types.Note.model_fields.items()}
    assert defaults["amount"] == Decimal("-0.50") and str(defaults["amount"]) == "-0.50"
    assert defaults["ref"] == uuid.UUID(int=5)
    assert defaults["day"] == date(2020, 1, 2)
    assert defaults["at"] == datetime.fromisoformat("2020-01-02T03:04:05.000006+00:00")
    assert defaults["opens"] == time(8, 30)
    assert defaults["lasts"] == timedelta(days=-1, microseconds=5)
    for bad in ({"count": -4}, {"ratio": [0]}, {"level": "low"}):
        with pytest.raises(ValueError):
            types.Note.model_validate(bad)
    assert types.Note.model_validate({"level": "high"}).level == types.Level.HIGH


def test_a_field_inside_a_nested_annotation_keeps_all_it_says(
    designs: DesignRunner, importable: Path
) -> None:
    # Only the constraints and the description of a Field() inside list[Annotated[...]] were
    # written: the discriminator (and a title, examples) silently went, so the generated model
    # tried each variant in turn, and its schema lost the discriminator mapping.
    types, note = generated(
        designs,
        importable,
        """
from typing import Annotated, Literal
from pydantic import BaseModel, Field
class Cat(BaseModel):
    kind: Literal["cat"]
class Dog(BaseModel):
    kind: Literal["dog"]
class Note(BaseModel):
    pets: list[Annotated[Cat | Dog, Field(discriminator="kind", title="Pet", examples=[{}])]]
""",
    )
    items = types.Note.model_json_schema()["properties"]["pets"]["items"]
    assert items["discriminator"]["propertyName"] == "kind" and items["title"] == "Pet"
    same_schemas(types.Note, note)
    with pytest.raises(ValueError, match="union_tag_invalid"):
        types.Note.model_validate({"pets": [{"kind": "cow"}]})


@pytest.mark.filterwarnings("ignore:The 'default' attribute")
def test_a_default_in_a_nested_annotation_is_refused_with_the_line(
    designs: DesignRunner,
) -> None:
    refused(
        designs,
        """
from typing import Annotated
from pydantic import BaseModel, Field
class Note(BaseModel):
    x: list[Annotated[int, Field(default=1)]]  # <-
""",
        'Args model Note, field "x": Field(default=...) has no effect inside a nested '
        "Annotated[...] (pydantic ignores it there); remove it, or give it in the field's own "
        "Field(...)",
    )


def test_validate_default_is_kept(designs: DesignRunner, importable: Path) -> None:
    # Field(validate_default=True) was dropped: the design's model refuses its own default,
    # the generated one accepted it.
    types, note = generated(
        designs,
        importable,
        """
from pydantic import BaseModel, Field
class Note(BaseModel):
    x: int = Field(default="seven", validate_default=True)
""",
    )
    for model in (note, types.Note):
        with pytest.raises(ValueError, match="int_parsing"):
            model()


def test_enum_aliases_are_kept(designs: DesignRunner, importable: Path) -> None:
    # Iterating the enum skips aliases: the generated enum lacked LOW, so Level["LOW"] failed
    # and its schema's "enum" listed "low" once where the design's lists it twice.
    types, note = generated(
        designs,
        importable,
        """
import enum
from pydantic import BaseModel
class Level(str, enum.Enum):
    MIN = "low"
    LOW = "low"
    HIGH = "high"
class Note(BaseModel):
    level: Level
""",
    )
    assert types.Level["LOW"] is types.Level.MIN
    same_schemas(types.Note, note)


def test_nested_annotations_keep_their_order(designs: DesignRunner, importable: Path) -> None:
    # Annotated[Annotated[U, Field(discriminator=...)], Field(min_length=1)] was written as one
    # Field(discriminator=..., min_length=1): pydantic applies a Field's constraints before its
    # discriminator, so the generated module failed on import ("'function-after' is not a
    # valid discriminated union variant").
    types, note = generated(
        designs,
        importable,
        """
from typing import Annotated, Literal
from pydantic import BaseModel, Field
class Cat(BaseModel):
    kind: Literal["cat"]
class Dog(BaseModel):
    kind: Literal["dog"]
class Note(BaseModel):
    pets: list[Annotated[Annotated[Cat | Dog, Field(discriminator="kind")], Field(min_length=1)]]
""",
    )
    same_schemas(types.Note, note)


def test_two_classes_of_one_name_in_a_schema_are_refused(designs: DesignRunner) -> None:
    # pydantic then names their $defs after the design's module ("_agentgen_design_2__A__Item",
    # numbered by load order), which the generated classes (another module) cannot match.
    refused(
        designs,
        """
from pydantic import BaseModel
class A:
    class Item(BaseModel):
        x: int
class B:
    class Item(BaseModel):
        y: str
class Note(BaseModel):
    a: A.Item
    b: B.Item
""",
        "Args model Note: its JSON Schema names the type",
    )


def test_constraints_keep_the_order_pydantic_applies_them_in(
    designs: DesignRunner, importable: Path
) -> None:
    # Written as one Field(multiple_of=0.5, pattern=...), which applies multiple_of first: the
    # pattern then no longer fits the string schema and left the generated JSON Schema.
    types, note = generated(
        designs,
        importable,
        """
from typing import Annotated
from pydantic import BaseModel, Field, constr
class Note(BaseModel):
    x: Annotated[constr(pattern=r"^a$"), Field(multiple_of=0.5)] = "a"
    y: Annotated[int, Field(le=5)] = Field(0, ge=0)
""",
    )
    assert types.Note.model_json_schema()["properties"]["x"]["pattern"] == "^a$"
    same_schemas(types.Note, note)


def test_a_class_name_that_is_no_identifier_keeps_its_defs_name(
    designs: DesignRunner, importable: Path
) -> None:
    # create_model("odd name") is written as class Model: its $defs entry was "Model", where
    # pydantic names the design's "odd_name".
    types, note = generated(
        designs,
        importable,
        """
from pydantic import BaseModel, create_model
Odd = create_model("odd name", a=(int, 0))
class Note(BaseModel):
    odd: Odd
""",
    )
    assert list(types.Note.model_json_schema()["$defs"]) == ["odd_name"]
    same_schemas(types.Note, note)


def test_defaults_of_another_type_are_written_as_the_values_they_stand_for(
    designs: DesignRunner, importable: Path
) -> None:
    # pydantic does not validate defaults; written as they were, they failed mypy --strict on
    # the generated module (and a model instance default was refused).
    types, note = generated(
        designs,
        importable,
        "import datetime, enum\n"
        "from pydantic import BaseModel\n"
        "class Color(str, enum.Enum):\n"
        "    red = 'red'\n"
        "class Point(BaseModel):\n"
        "    x: int = 0\n"
        "class Note(BaseModel):\n"
        "    origin: Point = {'x': 1}\n"
        "    here: Point = Point()\n"
        "    color: Color = 'red'\n"
        "    when: datetime.date = '2024-01-01'\n"
        "    ratio: float = 1\n",
    )
    fields = types.Note.model_fields
    assert fields["origin"].default == types.Point(x=1)
    assert fields["here"].default == types.Point() and not fields["here"].default.model_fields_set
    assert fields["color"].default is types.Color.red
    assert fields["when"].default == date(2024, 1, 1)
    assert type(fields["ratio"].default) is int  # 1.0 would change the schema's default
    same_schemas(types.Note, note)


def test_a_default_that_is_no_value_of_its_type_is_refused(designs: DesignRunner) -> None:
    refused(
        designs,
        "from pydantic import BaseModel\nclass Note(BaseModel):\n    count: int = 'many'  # <-\n",
        "Args model Note, field \"count\": default 'many' is not a value of the field's type int "
        "(Input should be a valid integer, unable to parse string as an integer",
    )
