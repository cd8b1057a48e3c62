"""Random pydantic models through the real generator: every model it accepts is reproduced in
the generated ``types.py`` (the module imports, the class's JSON Schemas in both modes are the
design model's, and sample inputs are accepted, refused and dumped alike); every model it
refuses is a design error on the line of the ``Args``/``Return`` that uses it.

A model is drawn as source text (fields, annotations, ``Field(...)`` arguments, defaults,
``model_config``, docstrings, enums), so a failing example prints the design that shows it.
"""

from __future__ import annotations

import importlib
import json
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pydantic
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agentgen.codegen.loader import UserCodeError
from agentgen.codegen.model_builder import build
from agentgen.codegen.output import write
from agentgen.codegen.pipeline import check_file, render_model
from agentgen.runtime.contracts.codecs import ModelCodec
from tests.codegen.helpers import importable

#: Modules and names under private aliases: a field can be named like any public one.
HEADER = """\
from agentgen.dsl import *
import datetime as _datetime, decimal as _decimal, enum as _enum, typing as _typing
import uuid as _uuid, pydantic as _pydantic, pydantic.alias_generators
from pydantic import BaseModel
"""

#: Texts with what breaks Python source: quotes, backslashes, newlines, braces, non-ASCII.
odd_text = st.sampled_from(
    ["plain", "", 'a "quoted" \'one\'', "back\\slash", 'tri"""ple', "line\nbreak", "{x}", "é€",
     "\u2028", " padded ", "\\d+", "ends\\"]
)  # fmt: skip
FIELD_NAMES = [
    "a", "b", "value", "int", "str", "list", "dict", "float", "bool", "Any", "Field", "Literal",
    "Annotated", "BaseModel", "ConfigDict", "datetime", "uuid", "decimal", "enum", "typing",
    "annotations", "type", "id", "M0", "M1", "E0", "kind", "None_", "ñame",
]  # fmt: skip
CLASS_NAMES = ["M0", "M1", "Field", "Any", "Model", "datetime", "list", "str2"]
SCALARS = [
    "str", "int", "float", "bool", "None", "typing.Any", "bytes", "datetime.datetime",
    "datetime.date", "datetime.time", "datetime.timedelta", "uuid.UUID", "decimal.Decimal",
    "pydantic.HttpUrl",
    "pydantic.AnyUrl", "pydantic.PositiveInt", "pydantic.StrictInt", "pydantic.StrictStr",
    "pydantic.NonNegativeFloat", "pydantic.conint(ge=-3, le=2**70)",
    "pydantic.confloat(gt=-0.0, allow_inf_nan=False)", "pydantic.constr(pattern=r'^a\"b\\\\d$')",
    "pydantic.condecimal(max_digits=5, decimal_places=2)", "pydantic.conlist(int, min_length=1)",
    "pydantic.SecretStr", "pydantic.Json", "pydantic.FutureDate", "pydantic.AwareDatetime",
]  # fmt: skip
LITERALS = [
    "'a'", "'\"q\"'", "'back\\\\slash'", "-1", "0", "2**70", "-(2**70)", "True", "False", "None",
    "1.5", "-0.0", "b'x'", "E0.A", "'\\u2028'",
]  # fmt: skip
DEFAULTS = [
    "None", "0", "-1", "2**70", "-0.0", "1.5", "1e300", "5e-324", "True", "'x'", "'a\"b\\\\c'",
    "[]", "{}", "[1, 'x']", "{'k': [1.5, None]}", "(1, 2)", "{1, 2}", "b'x'",
    "datetime.date(2020, 1, 2)", "datetime.datetime(2020, 1, 2, 3, 4, 5)",
    "datetime.datetime(2020, 1, 2, tzinfo=datetime.timezone.utc)", "datetime.time(1, 2, 3)",
    "datetime.timedelta(days=1, microseconds=5)", "uuid.UUID(int=5)", "decimal.Decimal('1.50')",
    "decimal.Decimal('-0')", "float('nan')", "float('inf')", "E0.A", "'\\u2028'", "{'k': E0.A}",
    "10**5000", "uuid.UUID(int=2**128 - 1)", "datetime.timedelta(days=10**6, microseconds=1)",
]  # fmt: skip
CONSTRAINTS = [
    "ge=0", "gt=-1.5", "le=2**70", "lt=float('inf')", "multiple_of=0.5", "min_length=1",
    "max_length=3", "pattern=r'^[a-z\"\\'\\\\]*$'", "strict=True", "allow_inf_nan=False",
    "max_digits=4", "decimal_places=1",
]  # fmt: skip
FIELD_EXTRAS = [
    "title={t!r}", "description={t!r}", "examples=[{t!r}, 1]", "json_schema_extra={{'x': {t!r}}}",
    "alias={t!r}", "validation_alias='v_in'", "serialization_alias='v_out'", "alias='same'",
    "exclude=True", "frozen=True", "deprecated=True", "repr=False", "default_factory=list",
    "default_factory=dict", "default_factory=lambda: [1]", "json_schema_extra=lambda s: None",
    "union_mode='left_to_right'", "coerce_numbers_to_str=True", "fail_fast=True",
    "validate_default=True", "validate_default=False", "exclude_if=lambda v: v is None",
    "field_title_generator=lambda name, info: name.upper()",
]  # fmt: skip
#: Arguments of a Field() inside a nested Annotated[...].
NESTED_FIELDS = [
    "title='T'", "description='d\"'", "examples=[1]", "json_schema_extra={'x': 1}",
    "validate_default=True", "default=1", "alias='a'", "deprecated=True",
]  # fmt: skip
CONFIGS = [
    "extra='forbid'", "extra='allow'", "extra='ignore'", "frozen=True", "populate_by_name=True",
    "title={t!r}", "str_strip_whitespace=True", "str_max_length=3", "str_to_lower=True",
    "use_enum_values=True", "validate_default=True", "json_schema_extra={{'x': {t!r}}}",
    "alias_generator=pydantic.alias_generators.to_camel", "strict=True",
    "ser_json_timedelta='float'", "coerce_numbers_to_str=True", 
    "use_attribute_docstrings=True",
]  # fmt: skip
ENUM_KINDS = {
    "str, enum.Enum": st.sampled_from(["'a'", "'B \"x\"'", "'\\\\'", "''", "'\\u2028'"]),
    "enum.StrEnum": st.sampled_from(["'a'", "'b'", "'c\\nd'"]),
    "enum.IntEnum": st.sampled_from(["0", "-1", "2**70", "True"]),
    "enum.Enum": st.sampled_from(["1", "'a'", "1.5", "None", "-0.0", "(1, 2)"]),
    "int, enum.Enum": st.sampled_from(["1", "2", "-3"]),
}
#: JSON values a field is given in the sample inputs, besides ones drawn from the model.
SAMPLES = [
    None, True, False, 0, -1, 2**70, 1.5, -0.0, "x", "", "a\"b", "2020-01-02",
    "2020-01-02T03:04:05Z", "12:00:00", "P1D", "00000000-0000-0000-0000-000000000005", "1.50",
    "https://example.com/x", "[1]", [], [1, "x"], {}, {"k": 1}, {"kind": "cat"},
    {"kind": "dog", "name": "x"}, {"kind": 'd"g', "age": 2}, "A", "a", "b", "B \"x\"", "\\",
    2, -3, "back\\slash", '"q"', "\u2028", 10**30,
]  # fmt: skip


@dataclass
class Plan:
    source: str
    #: The models used by tools, by name, and the lines of their Args and Return.
    tools: list[tuple[str, int, int]]
    field_names: list[str]


def private(line: str) -> str:
    """``line`` with every module and typing or pydantic name through its private alias."""
    line = re.sub(r"(?<![\w.])(datetime|decimal|enum|typing|uuid|pydantic)\.", r"_\1.", line)
    line = re.sub(r"(?<![\w.])(Literal|Annotated|Optional|Union)\[", r"_typing.\1[", line)
    return re.sub(r"(?<![\w.])(Field|ConfigDict)\(", r"_pydantic.\1(", line)


def annotations(earlier: list[str], name: str, enums: list[str]) -> st.SearchStrategy[str]:
    """Annotations of a field of class ``name``, which refers to itself by a string."""
    leaves = st.sampled_from(SCALARS) | st.lists(
        st.sampled_from(LITERALS), min_size=1, max_size=3
    ).map(lambda vs: f"Literal[{', '.join(vs)}]")
    leaves = leaves | st.sampled_from([*earlier, *enums, repr(name)])

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            inner.map(lambda t: f"list[{t}]"),
            inner.map(lambda t: f"dict[str, {t}]"),
            inner.map(lambda t: f"typing.Optional[{t}]"),
            inner.map(lambda t: f"{t} | None" if not t.startswith("'") else f"Optional[{t}]"),
            st.tuples(inner, inner).map(lambda ts: f"Union[{ts[0]}, {ts[1]}]"),
            inner.map(lambda t: f"tuple[{t}, ...]"),
            inner.map(lambda t: f"set[{t}]"),
            inner.map(lambda t: f"typing.List[{t}]"),
            st.tuples(
                inner, st.lists(st.sampled_from(CONSTRAINTS), min_size=1, max_size=2, unique=True)
            ).map(lambda a: f"Annotated[{a[0]}, Field({', '.join(a[1])})]"),
            st.tuples(inner, st.sampled_from(CONSTRAINTS)).map(
                lambda a: f"Annotated[{a[0]}, pydantic.Field({a[1]}), 'note']"
            ),
            st.tuples(inner, st.sampled_from(NESTED_FIELDS)).map(
                lambda a: f"Annotated[{a[0]}, Field({a[1]})]"
            ),
        )

    return st.recursive(leaves, extend, max_leaves=3)


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    lines = HEADER.splitlines()
    # One enum, E0, which annotations, literals and defaults may use; its values may repeat
    # (a repeated value makes the member an alias of the first).
    kind = draw(st.sampled_from(sorted(ENUM_KINDS)))
    values = draw(st.lists(ENUM_KINDS[kind], min_size=1, max_size=3))
    members = draw(
        st.sampled_from([["A", "B", "C"], ["A", "title", "Field"], ["A", "value_", "Any"]])
    )
    lines.append(private(f"class E0({kind}):"))
    if draw(st.booleans()):
        lines.append(f"    {draw(odd_text)!r}")
    for member, value in zip(members, values, strict=False):
        lines.append(private(f"    {member} = {value}"))
    classes: list[str] = []
    if draw(st.booleans()):
        # Two variants of a discriminated union, which later classes may use.
        for variant, tag in (("Cat", "'cat'"), ("Dog", draw(st.sampled_from(["'dog'", "'d\"g'"])))):
            lines.append(f"class {variant}(BaseModel):")
            lines.append(private(f"    kind: Literal[{tag}]"))
            lines.append(f"    {draw(st.sampled_from(['name: str', 'age: int = 0', 'pass']))}")
        classes.append(draw(st.sampled_from([
            "Annotated[Union[Cat, Dog], Field(discriminator='kind')]",
            "Annotated[Cat | Dog, Field(discriminator='kind', description='pet')]",
            "Union[Cat, Dog]",
        ])))  # fmt: skip
    if draw(st.booleans()):
        # A class named by create_model: no identifier, or one a generated module uses.
        title = draw(st.sampled_from(["odd name", "Field", "é", "a.b"]))
        lines.append(f"Odd = _pydantic.create_model({title!r}, a=(int, 0), __doc__=' D ')")
        classes.append("Odd")
    field_names: list[str] = []
    count = draw(st.integers(1, 2))
    names = draw(
        st.lists(st.sampled_from(CLASS_NAMES), min_size=count, max_size=count, unique=True)
    )
    tools: list[str] = []
    for name in names:
        # A class refers to the classes before it, to itself and to the classes after it by
        # name (a string; the design rebuilds them at the end), and may extend the one
        # before it.
        models = [c for c in tools if c != name]
        base = draw(st.sampled_from(["BaseModel", *models[-1:]]))
        lines.append(f"class {name}({base}):")
        if draw(st.booleans()):
            doc = draw(odd_text)
            if draw(st.booleans()):
                doc += "\n    more\n    "  # indented lines, as a docstring in a class
            lines.append(f"    {doc!r}")
        config = draw(
            st.lists(st.sampled_from(CONFIGS), max_size=2, unique_by=lambda c: c.split("=")[0])
        )
        if config:
            text = draw(odd_text)
            lines.append(
                private(f"    model_config = ConfigDict({', '.join(config)})").format(t=text)
            )
        fields = draw(st.lists(st.sampled_from(FIELD_NAMES), max_size=3, unique=True))
        for fname in fields:
            later = [repr(n) for n in names if n not in tools]
            annotation = draw(annotations([*classes, *later], name, ["E0"]))
            kwargs = []
            if draw(st.booleans()):
                kwargs.append(f"default={draw(st.sampled_from(DEFAULTS))}")
            extras = draw(st.lists(st.sampled_from(FIELD_EXTRAS + CONSTRAINTS), max_size=2))
            text = draw(odd_text)
            kwargs.extend(extra.format(t=text) for extra in extras)
            if any(k.startswith("default_factory") for k in extras):
                kwargs = [k for k in kwargs if not k.startswith("default=")]
            # One of each keyword (the last drawn).
            kwargs = list({k.split("=")[0]: k for k in kwargs}.values())
            value = f" = Field({', '.join(kwargs)})" if kwargs else ""
            lines.append(f"    {fname}: {private(annotation)}{private(value)}")
            if draw(st.booleans()):
                lines.append(f"    {draw(odd_text)!r}")  # an attribute docstring
            field_names.append(fname)
        if not fields:
            lines.append("    pass")
        classes.append(name)
        tools.append(name)
    if draw(st.booleans()):
        lines.extend(f"{name}.model_rebuild()" for name in tools)
    lines.append('with Toolset("fuzz") as Fuzz:')
    used: list[tuple[str, int, int]] = []
    for index, name in enumerate(tools):
        lines.append(f'    with Tool("t{index}", "T."):')
        lines.append(f"        Args({name})")
        lines.append(f"        Return({name})")
        used.append((name, len(lines) - 1, len(lines)))
    lines.append('with Service("svc"):')
    lines.append('    Agent("a", "A.", lambda: Use(Fuzz))')
    return Plan("\n".join(lines) + "\n", used, field_names)


def outcome(
    model: type[pydantic.BaseModel], data: Any, *, strict: bool, renamed: dict[str, str]
) -> Any:
    """What validating ``data`` (as JSON) gives: the dumped value, or the errors' kinds.

    An error inside a union names the member class by its ``__name__``, which a class
    written under another name (``Field2`` for the design's ``Field``) does not share; its
    ``__qualname__`` is the design's name, which ``renamed`` maps it back to.
    """
    try:
        value = model.model_validate_json(json.dumps(data), strict=strict)
    except pydantic.ValidationError as exc:
        return (
            "refused",
            sorted(
                (e["type"], str(tuple(renamed.get(str(part), part) for part in e["loc"])))
                for e in exc.errors()
            ),
        )
    except Exception as exc:
        return ("raised", type(exc).__name__)
    try:
        dumped = (
            value.model_dump(mode="json", by_alias=True),
            value.model_dump_json(by_alias=True),
            value.model_dump_json(),
        )
    except Exception as exc:
        return ("dump raised", type(exc).__name__)
    return ("accepted", dumped)


def schema(model: type[pydantic.BaseModel], mode: Any) -> Any:
    try:
        return model.model_json_schema(by_alias=True, mode=mode)
    except Exception as exc:
        return ("raised", type(exc).__name__, str(exc).splitlines()[0])


def check(plan: Plan, folder: Path, inputs: list[dict[str, Any]]) -> None:
    # Random models shadow BaseModel attributes and dump values their types do not expect:
    # pydantic warns, alike for both models.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compare(plan, folder, inputs)


def compare(plan: Plan, folder: Path, inputs: list[dict[str, Any]]) -> None:
    design = folder / "design.py"
    design.write_text(plan.source)
    try:
        checked = check_file(design)
    except UserCodeError:
        assume(False)  # the design's own code raised: not a model pydantic accepts
        raise
    lines = {line: name for name, *both in plan.tools for line in both}
    refused = set()
    for error in checked.errors:
        # A field at fault is reported at its own line, with the Args/Return call related.
        call = error.related[0] if error.related else error.loc
        assert call.line in lines, f"{error.format()}\n{plan.source}"
        assert error.message.startswith(("Args ", "Return ")), error.format()
        refused.add(lines[call.line])
    if checked.errors:
        return
    files = render_model(build(checked))
    out = folder / "gen"
    write(out, files)
    toolset = checked.root.toolsets[0]
    types_py = (out / "svc/toolsets/fuzz/types.py").read_text()
    shown = f"design:\n{plan.source}\ngenerated types.py:\n{types_py}"
    with importable(folder):
        specs = importlib.import_module("gen.svc.toolsets.fuzz.specs")
        renamed = {
            cls.__name__: cls.__qualname__
            for cls in vars(importlib.import_module("gen.svc.toolsets.fuzz.types")).values()
            if isinstance(cls, type) and cls.__qualname__ != cls.__name__
        }
        for index, tool in enumerate(toolset.tools):
            for expr, mode, spec in (
                (tool.args, "validation", getattr(specs, f"T{index}_SPEC").payload),
                (tool.result, "serialization", getattr(specs, f"T{index}_SPEC").result),
            ):
                assert expr is not None
                design_model = expr.value
                codec = spec.codec
                assert isinstance(codec, ModelCodec)
                generated = codec.model
                for either in ("validation", "serialization"):
                    theirs, ours = schema(design_model, either), schema(generated, either)
                    assert ours == theirs, f"{either} schema\n{ours}\n!=\n{theirs}\n{shown}"

                assert json.loads(spec.schema_json) == {
                    "$schema": json.loads(spec.schema_json)["$schema"],
                    **schema(design_model, mode),
                }
                for data in inputs:
                    for strict in (False, True):
                        theirs = outcome(design_model, data, strict=strict, renamed={})
                        ours = outcome(generated, data, strict=strict, renamed=renamed)
                        assert ours == theirs, (
                            f"{data!r} (strict={strict})\n{ours}\n!=\n{theirs}\n{shown}"
                        )


@st.composite
def cases(draw: st.DrawFn) -> tuple[Plan, list[dict[str, Any]]]:
    plan = draw(plans())
    pool = st.sampled_from(SAMPLES) | st.lists(st.sampled_from(SAMPLES), max_size=2)
    # Field names, and the aliases Field(...) and the alias generator give.
    keys = st.sampled_from(
        [*plan.field_names, "same", "v_in", "v_out", "kind", "plain", "é€", "\\d+", "anY"]
    )
    inputs = draw(st.lists(st.dictionaries(keys, pool, max_size=4), min_size=1, max_size=4))
    return plan, inputs


@settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(cases())
def test_every_accepted_model_is_reproduced(
    tmp_path_factory: Any, case: tuple[Plan, list[dict[str, Any]]]
) -> None:
    plan, inputs = case
    check(plan, tmp_path_factory.mktemp("fuzz"), inputs)
