"""A model field generated code cannot reproduce is reported at the field's own line, in the
module that declares it, not at the ``Args(...)``/``Return(...)`` call that uses the model."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

from click.testing import CliRunner

from agentgen.codegen import check_file
from agentgen.codegen.cli import main
from agentgen.dsl.errors import DesignError

MODELS = """\
from enum import Enum

from pydantic import BaseModel, create_model, field_validator


class Base(BaseModel):
    name: str
    tags: set[str]


class Weird(Base):
    raw: bytes


class Mixed(Enum):
    A = "a"
    B = 2


class Outer:
    class Inner(BaseModel):
        pair: tuple[int, int]
        mixed: Mixed


class Checked(BaseModel):
    name: str

    @field_validator("name")
    @classmethod
    def _strip(cls, value: str) -> str:
        return value.strip()


Made = create_model("Made", ids=(set[int], ...))
"""

DESIGN = """\
from agentgen.dsl import *
from models import Checked, Made, Outer, Weird

Odd = Toolset("odd", lambda: (
    Tool("weird", "Weird.", lambda: Args(Weird)),
    Tool("inner", "Inner.", lambda: Args(Outer.Inner)),
    Tool("checked", "Checked.", lambda: Return(Checked)),
    Tool("made", "Made.", lambda: Args(Made)),
))
Service("svc", lambda: Agent("a", "Uses odd.", lambda: Use(Odd)))
"""


def _line(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if line.strip() == text)


def _errors(tmp_path: Path) -> tuple[Path, Path, dict[str, DesignError]]:
    models = tmp_path / "models.py"
    models.write_text(MODELS)
    design = tmp_path / "design.py"
    design.write_text(DESIGN)
    errors = check_file(design).errors
    by_field = {}
    for error in errors:
        key = error.message.split(":", 1)[0]  # "Args model Weird, field "raw""
        by_field[key] = error
    return design, models, by_field


def test_a_field_is_reported_at_its_own_line_in_the_models_module(tmp_path: Path) -> None:
    design, models, errors = _errors(tmp_path)
    raw = errors['Args model Weird, field "raw"']
    assert (os.path.abspath(raw.loc.file), raw.loc.line) == (
        str(models),
        _line(MODELS, "raw: bytes"),
    )
    assert (raw.loc.col, raw.loc.end_col) == (4, len("    raw: bytes"))
    # The call that uses the model is kept as the related place.
    (related,) = raw.related
    assert (os.path.abspath(related.file), related.line) == (str(design), 5)
    assert 'toolset "odd" › tool "weird"' in raw.where


def test_an_inherited_field_is_reported_in_the_base_class(tmp_path: Path) -> None:
    _, models, errors = _errors(tmp_path)
    tags = errors['Args model Weird, field "tags"']
    assert (os.path.abspath(tags.loc.file), tags.loc.line) == (
        str(models),
        _line(MODELS, "tags: set[str]"),
    )


def test_a_nested_class_field_and_a_type_it_uses_point_at_the_field(tmp_path: Path) -> None:
    _, models, errors = _errors(tmp_path)
    pair = errors['Args model Outer.Inner, field "pair"']
    assert pair.loc.line == _line(MODELS, "pair: tuple[int, int]")
    # The enum's own problem is reported where the field uses it.
    mixed = errors["Args model Mixed"]
    assert (os.path.abspath(mixed.loc.file), mixed.loc.line) == (
        str(models),
        _line(MODELS, "mixed: Mixed"),
    )


def test_a_whole_model_problem_is_reported_at_its_class(tmp_path: Path) -> None:
    _, models, errors = _errors(tmp_path)
    checked = errors["Return model Checked"]
    assert "has custom validators" in checked.message
    assert (os.path.abspath(checked.loc.file), checked.loc.line) == (
        str(models),
        _line(MODELS, "class Checked(BaseModel):"),
    )


def test_a_model_without_source_is_reported_at_the_call(tmp_path: Path) -> None:
    design, _, errors = _errors(tmp_path)
    made = errors['Args model Made, field "ids"']
    assert (os.path.abspath(made.loc.file), made.loc.line) == (str(design), 8)
    assert made.related == ()


def test_the_cli_shows_the_field_line_of_the_other_module(tmp_path: Path) -> None:
    (tmp_path / "models.py").write_text(MODELS)
    (tmp_path / "design.py").write_text(DESIGN)
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = CliRunner().invoke(main, ["validate", "design.py"])
    finally:
        os.chdir(old)
    assert result.exit_code == 1
    expected = textwrap.dedent(
        f"""\
        models.py:{_line(MODELS, "raw: bytes")}: toolset "odd" › tool "weird": Args model Weird, \
field "raw": bytes have no JSON form; use str (base64)
            raw: bytes
            ^^^^^^^^^^
        """
    )
    assert expected in result.stderr, result.stderr
