"""Python source for the pydantic models a design declares.

Generated packages never import the design, so each tool type is written out again as a
self-contained model. The renderer reads the model's fields (annotations, defaults, aliases,
descriptions, constraints) and writes an equivalent class; anything it cannot reproduce
exactly (validators, serializers, computed fields, types outside the supported set) is a design
error naming the model and the field, never a silently weaker model.

Supported: ``str int float bool None``, ``datetime``/``date``/``time``/``timedelta``,
``UUID``, ``Decimal``, ``Any``, ``list[T]``, ``dict[str, T]``, unions and optionals,
``Literal`` of strings/integers/booleans/None/enum members, ``Enum`` subclasses with string or
integer values (aliases included), nested models, types exported by ``pydantic`` (``HttpUrl``,
``EmailStr``, ``conint(...)``...), ``Annotated`` constraints (``ge gt le lt multiple_of
min_length max_length pattern strict allow_inf_nan``), defaults of JSON values, enum members,
``Decimal``, ``UUID`` and dates and times.

Every model the generator accepts is checked against the design's by
``tests/codegen/test_types_property.py`` (same JSON Schemas, same validation).
"""

from __future__ import annotations

import datetime
import decimal
import enum
import inspect
import keyword
import math
import types
import typing
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

import annotated_types
import pydantic
import pydantic_core
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import PydanticUndefined

_SIMPLE = {str: "str", int: "int", float: "float", bool: "bool", bytes: None}
#: Standard-library types, written through their module imported under a private alias
#: (``import uuid as _uuid`` → ``_uuid.UUID``): a field named ``uuid`` cannot shadow it.
_STDLIB = {
    datetime.datetime: ("datetime", "datetime"),
    datetime.date: ("datetime", "date"),
    datetime.time: ("datetime", "time"),
    datetime.timedelta: ("datetime", "timedelta"),
    uuid.UUID: ("uuid", "UUID"),
    decimal.Decimal: ("decimal", "Decimal"),
}
_CONSTRAINTS = (
    annotated_types.Gt,
    annotated_types.Ge,
    annotated_types.Lt,
    annotated_types.Le,
    annotated_types.MultipleOf,
    annotated_types.MinLen,
    annotated_types.MaxLen,
)
_FIELD_KWARGS = frozenset(
    {
        "gt", "ge", "lt", "le", "multiple_of", "min_length", "max_length", "pattern", "strict",
        "allow_inf_nan", "max_digits", "decimal_places",
    }
)  # fmt: skip
_CONFIG_KEYS = frozenset(
    {
        "title", "extra", "frozen", "populate_by_name", "strict", "str_strip_whitespace",
        "str_to_lower", "str_to_upper", "str_min_length", "str_max_length", "use_enum_values",
        "validate_default", "json_schema_extra", "alias_generator", "validate_by_name",
        "validate_by_alias", "serialize_by_alias",
    }
)  # fmt: skip
#: ``Field(...)`` arguments that belong to a field, not to a type inside its annotation
#: (pydantic ignores them there, with a warning).
_OUTER_ONLY = (
    "default_factory", "alias", "validation_alias", "serialization_alias", "validate_default",
)  # fmt: skip
# Captured per field (aliases are rendered explicitly), so not written to the config.
_CONFIG_CAPTURED = frozenset({"alias_generator"})
#: Names a generated ``types.py`` imports or uses in annotations: a class of the design with
#: one of these names is written under another (``Field`` → ``Field2``).
RESERVED_NAMES = frozenset(
    {
        "BaseModel", "ConfigDict", "Field", "Annotated", "Any", "Literal", "_builtins",
        "_datetime", "_decimal", "_enum", "_typing", "_uuid", "_pydantic", "annotations",
        "list", "dict", "str", "int", "float", "bool", "__all__",
    }
)  # fmt: skip


def _docstring(doc: str | None) -> str | None:
    """The docstring a generated class is given for a class with docstring ``doc``: pydantic
    makes the schema's description ``inspect.cleandoc(doc)`` (kept trailing spaces on the first
    line included; ``""`` for a docstring of blanks), so the generated docstring must clean to
    the same text. A docstring of blanks is kept as it is (it is truthy, and cleans to ``""``).
    """
    if not doc:
        return None
    cleaned = inspect.cleandoc(doc)
    return cleaned or doc


def int_literal(value: int) -> str:
    """A Python literal of an integer: ``repr``, or hexadecimal for one too long for ``repr``
    (over ``sys.get_int_max_str_digits()`` digits, which raises ValueError)."""
    try:
        return repr(value)
    except ValueError:
        return hex(value)


def _scalar(value: str | int | bool | None) -> str:
    """``repr`` of a string, an integer (:func:`int_literal`), a boolean or None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return int_literal(value)
    return repr(value)


def _defs_name(name: str) -> str:
    """The name of a class's ``$defs`` entry: pydantic keeps what follows the last dot and
    replaces characters outside ``[a-zA-Z0-9.-_]`` (``create_model("odd name")`` is
    ``odd_name``)."""
    return GenerateJsonSchema().normalize_name(name.rsplit(".", 1)[-1])


def _field_order() -> list[str]:
    """The order in which ``pydantic.Field(...)`` applies its constraints, whatever the order
    of its arguments (the ones it groups, such as ``pattern``, come last)."""
    every = pydantic.Field(
        strict=True, gt=1, ge=1, lt=1, le=1, multiple_of=1, min_length=1, max_length=1,
        pattern="a", allow_inf_nan=True, max_digits=1, decimal_places=1,
    )  # fmt: skip
    return [
        attr
        for item in every.metadata
        for attr in (getattr(item, "__dataclass_fields__", None) or vars(item))
    ]


_FIELD_ORDER = _field_order()


def _in_field_order(constraints: list[str]) -> bool:
    """Whether ``constraints`` (``gt=0``...) are in the order ``Field(...)`` applies them."""
    positions = [_FIELD_ORDER.index(item.split("=", 1)[0]) for item in constraints]
    return positions == sorted(positions)


def _once(model: str, name: str, constraints: list[str]) -> list[str]:
    """``constraints`` (``gt=0``...), each of which must be given once: pydantic applies both
    of ``Annotated[int, Field(gt=0)] = Field(gt=-5)`` but shows only the last in the schema,
    and one ``Field(...)`` cannot say it twice."""
    seen: dict[str, str] = {}
    for item in constraints:
        key = item.split("=", 1)[0]
        if key in seen:
            raise UnsupportedType(
                model,
                name,
                f"constraint {key} is given twice ({seen[key]} and {item}, in the annotation "
                "and in Field(...), say); give it once",
            )
        seen[key] = item
    return constraints


class UnsupportedType(Exception):
    """The model cannot be reproduced; ``field`` is the field at fault (or None).

    ``at`` is the class and field (None: the class itself) whose source line the error points
    at, filled in by the class being written when the problem reaches it: a problem of a type
    a field uses (an enum with mixed values) is the field's, where the user wrote the type.
    """

    def __init__(self, model: str, field: str | None, reason: str) -> None:
        self.model = model
        self.field = field
        self.reason = reason
        self.at: tuple[type, str | None] | None = None
        where = f"model {model}" + (f', field "{field}"' if field else "")
        super().__init__(f"{where}: {reason}")

    def located(self, cls: type, field: str | None) -> UnsupportedType:
        """This problem, pointed at ``cls``'s ``field`` unless it points somewhere already."""
        if self.at is None:
            self.at = (cls, field)
        return self


@dataclass(frozen=True)
class FieldSource:
    name: str
    annotation: str
    #: Right-hand side of the assignment (``= ...``), or None for a required plain field.
    value: str | None


@dataclass(frozen=True)
class EnumMember:
    name: str
    value: str


@dataclass(frozen=True)
class ClassSource:
    name: str
    bases: str
    doc: str | None
    fields: tuple[FieldSource, ...] = ()
    members: tuple[EnumMember, ...] = ()
    config: str | None = None
    #: A private module-level name bound to the class after its definition (``_Level =
    #: Level``), which annotations use where a field of their class is named like it.
    alias: str | None = None
    #: The design class's name, given as ``__qualname__`` to a class written under another
    #: name (``Field2``): pydantic names the class's ``$defs`` entry after its qualname.
    qualname: str | None = None

    @property
    def is_enum(self) -> bool:
        return bool(self.members)


@dataclass
class TypeModule:
    """The classes of one generated ``types.py``, in an order where every class comes after
    the classes it refers to (cycles are closed by ``model_rebuild`` at the end).

    A field's name is bound in its class's namespace, where pydantic (and mypy) resolve the
    annotations and defaults of every field of the class: a field named ``Any`` or ``Level``
    would shadow the ``Any`` or the class ``Level`` another field refers to. So modules are
    imported under private aliases (``import uuid as _uuid``), and a name a class's fields
    shadow is written in that class through one: ``_typing.Any``, ``_pydantic.Field``,
    ``_builtins.int``, or ``_Level`` (bound to the class ``Level`` after its definition).
    """

    classes: list[ClassSource] = field(default_factory=list)
    #: Modules imported under a private alias (``import uuid as _uuid``), by name.
    imports: set[str] = field(default_factory=set)
    pydantic_names: set[str] = field(default_factory=lambda: {"BaseModel"})
    typing_names: set[str] = field(default_factory=set)
    _names: dict[int, str] = field(default_factory=dict)
    #: The ``$defs`` names pydantic gives the design's classes written here, when no other
    #: class of a schema has the same name (``Field`` for a class written ``Field2``).
    design_names: set[str] = field(default_factory=set)
    _taken: set[str] = field(default_factory=set)
    _in_progress: set[int] = field(default_factory=set)
    _stack: list[str] = field(default_factory=list)
    #: The field names of each class being written (innermost last).
    _fields: list[frozenset[str]] = field(default_factory=list)
    _aliases: dict[int, str] = field(default_factory=dict)
    #: Classes that refer to a class defined after them (a cycle): rebuilt at the end.
    rebuild: list[str] = field(default_factory=list)
    #: Fields that cannot be reproduced; every one is reported, not just the first.
    problems: list[UnsupportedType] = field(default_factory=list)
    #: True when a pydantic name is written ``_pydantic.X`` (a class of the design took ``X``,
    #: or a field of the class that uses it is named ``X``).
    pydantic_module: bool = False

    def add_model(self, model: type[BaseModel]) -> str:
        """Write ``model`` (and what it uses) into the module; return its class name here.

        Every problem found is collected in ``problems`` (the model's own, such as validators
        or generics, and each field's); only a model that is not fully defined raises
        :class:`UnsupportedType`, since its fields cannot be read.
        """
        return self._class_name(model)

    # ------------------------------------------------------------------ naming

    def _unique(self, base: str) -> str:
        name, counter = base, 2
        while (
            name in self._taken
            or name in RESERVED_NAMES
            or name in self.pydantic_names
            or keyword.iskeyword(name)
        ):
            name, counter = f"{base}{counter}", counter + 1
        self._taken.add(name)
        return name

    def _reserve(self, cls: type) -> tuple[str, bool]:
        key = id(cls)
        if key in self._names:
            return self._names[key], False
        name = self._unique(cls.__name__ if cls.__name__.isidentifier() else "Model")
        self._names[key] = name
        self.design_names.add(_defs_name(cls.__name__))
        return name, True

    def _shadowed(self, name: str) -> bool:
        """Whether a field of the class being written is named ``name``."""
        return bool(self._fields) and name in self._fields[-1]

    def _typing_name(self, name: str) -> str:
        if self._shadowed(name):
            self.imports.add("typing")
            return f"_typing.{name}"
        self.typing_names.add(name)
        return name

    def _pydantic_name(self, name: str) -> str:
        if self._shadowed(name) or name in self._taken:  # or a class of the design took it
            self.pydantic_module = True
            return f"_pydantic.{name}"
        self.pydantic_names.add(name)
        return name

    def _builtin_name(self, name: str) -> str:
        if self._shadowed(name):
            self.imports.add("builtins")
            return f"_builtins.{name}"
        return name

    def _class_ref(self, cls: type) -> str:
        """How the class being written refers to ``cls``: by its name, or by its private
        alias when a field of the class being written is named like it."""
        name = self._class_name(cls)
        if not self._shadowed(name):
            return name
        key = id(cls)
        alias = self._aliases.get(key)
        if alias is None:
            alias = self._aliases[key] = self._unique(f"_{name}")
            for index, source in enumerate(self.classes):
                if source.name == name:  # written already: bind the alias after it
                    self.classes[index] = replace(source, alias=alias)
        referrer = self._stack[-1]
        if key in self._in_progress and referrer not in self.rebuild:
            # The alias is bound after the class, which is still being written (a cycle, or
            # the class itself): the referrer is completed at the end.
            self.rebuild.append(referrer)
        return alias

    def _class_name(self, cls: type) -> str:
        name, new = self._reserve(cls)
        referrer = self._stack[-1] if self._stack else None
        forward = id(cls) in self._in_progress and referrer is not None and referrer != name
        if forward and referrer is not None and referrer not in self.rebuild:
            # A reference to a class still being written: it will come after the referrer.
            self.rebuild.append(referrer)
        if new:
            self._in_progress.add(id(cls))
            self._stack.append(name)
            try:
                if isinstance(cls, type) and issubclass(cls, BaseModel):
                    source = self._model(cls, name)
                else:
                    source = self._enum(cls, name)
                qualname = None if name == cls.__name__ else cls.__name__
                self.classes.append(
                    replace(source, alias=self._aliases.get(id(cls)), qualname=qualname)
                )
            finally:
                self._stack.pop()
                self._in_progress.discard(id(cls))
        return name

    # ------------------------------------------------------------------ classes

    def _model(self, model: type[BaseModel], name: str) -> ClassSource:
        qual = model.__qualname__
        decorators = model.__pydantic_decorators__
        custom = [
            kind
            for kind, found in (
                ("validators", decorators.field_validators or decorators.validators),
                ("model validators", decorators.model_validators or decorators.root_validators),
                ("serializers", decorators.field_serializers or decorators.model_serializers),
                ("computed fields", decorators.computed_fields),
            )
            if found
        ]
        # Every problem of the model is reported, not just the first: whole-model problems
        # first, then each field's.
        if custom:
            self.problems.append(
                UnsupportedType(
                    qual,
                    None,
                    f"has custom {', '.join(custom)}, which generated code cannot reproduce; "
                    "express the rule with Field(...) constraints or check it in the executor",
                ).located(model, None)
            )
        if (
            model.__pydantic_generic_metadata__["parameters"]
            or model.__pydantic_generic_metadata__["origin"]
        ):
            self.problems.append(
                UnsupportedType(qual, None, "generic models are not supported").located(model, None)
            )
        if isinstance(model, type) and issubclass(model, pydantic.RootModel):
            self.problems.append(
                UnsupportedType(
                    qual, None, "RootModel is not supported; use a model with fields"
                ).located(model, None)
            )
        if not model.__pydantic_complete__:
            raise UnsupportedType(
                qual, None, "is not fully defined (a forward reference is missing)"
            ).located(model, None)
        # Fields first: the classes they use are appended before this one.
        fields: list[FieldSource] = []
        self._fields.append(frozenset(model.model_fields))
        try:
            for fname, info in model.model_fields.items():
                try:
                    fields.append(self._field(qual, fname, info))
                except UnsupportedType as problem:
                    self.problems.append(problem.located(model, fname))
        finally:
            self._fields.pop()
        doc = None if model.__doc__ == BaseModel.__doc__ else _docstring(model.__doc__)
        # ``model_config`` comes first in the class body, before any field binds its name.
        self._fields.append(frozenset())
        try:
            config = self._config(model, renamed=name != model.__name__)
        except UnsupportedType as problem:
            self.problems.append(problem.located(model, None))
            config = None
        finally:
            self._fields.pop()
        return ClassSource(name, "BaseModel", doc, fields=tuple(fields), config=config)

    def _config(self, model: type[BaseModel], *, renamed: bool = False) -> str | None:
        config = dict(model.model_config)
        if renamed:
            # Written under another name: keep the schema title of the design's class.
            config.setdefault("title", model.__name__)
        unknown = sorted(k for k in config if k not in _CONFIG_KEYS)
        if unknown:
            raise UnsupportedType(
                model.__qualname__, None, f"model_config keys {unknown} are not supported"
            )
        items = []
        for key in sorted(config):
            if key in _CONFIG_CAPTURED:
                continue
            value = config[key]
            items.append(f"{key}={self._literal(model.__qualname__, None, value)}")
        if not items:
            return None
        self.pydantic_names.add("ConfigDict")
        return f"ConfigDict({', '.join(items)})"

    def _enum(self, cls: type, name: str) -> ClassSource:
        assert issubclass(cls, enum.Enum)
        values = [m.value for m in cls]
        if all(isinstance(v, str) for v in values):
            base = "_enum.StrEnum"
        elif all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            base = "_enum.IntEnum"
        else:
            raise UnsupportedType(
                cls.__qualname__, None, "enum values must be all strings or all integers"
            )
        self.imports.add("enum")
        # Aliases too (a member whose value repeats another's): pydantic lists their values
        # in the schema's "enum", and Enum["ALIAS"] is part of the class.
        members = tuple(
            EnumMember(member_name, _scalar(member.value))
            for member_name, member in cls.__members__.items()
        )
        doc = (
            None
            if cls.__doc__ in (enum.Enum.__doc__, "An enumeration.")
            else _docstring(cls.__doc__)
        )
        return ClassSource(name, base, doc, members=members)

    # ------------------------------------------------------------------ fields

    def _field(self, model: str, name: str, info: FieldInfo) -> FieldSource:
        if not name.isidentifier() or keyword.iskeyword(name):
            raise UnsupportedType(model, name, "field names must be Python identifiers")
        annotation = self._annotation(model, name, info.annotation)
        kwargs: list[str] = []
        default = info.default
        required = default is PydanticUndefined and info.default_factory is None
        if info.default_factory is not None:
            factory = info.default_factory
            if factory not in (list, dict):
                raise UnsupportedType(
                    model, name, "default_factory must be list or dict (use a literal default)"
                )
            kwargs.append(f"default_factory={self._builtin_name(factory.__name__)}")
        elif not required:
            typed = (
                default  # validated on every use, as it is: kept so
                if info.validate_default
                else self._typed_default(model, name, info.annotation, default)
            )
            kwargs.append(self._literal(model, name, typed))
        if info.alias is not None and info.alias != name:
            kwargs.append(f"alias={info.alias!r}")
        if info.validation_alias not in (None, info.alias) or info.serialization_alias not in (
            None,
            info.alias,
        ):
            raise UnsupportedType(
                model, name, "separate validation/serialization aliases are not supported"
            )
        kwargs.extend(self._info_kwargs(model, name, info, constraints=False))
        # pydantic applies a field's constraints in their order, and Field(...) puts its own in
        # a fixed one: where that differs (Annotated[constr(pattern=...), Field(multiple_of=
        # ...)], whose multiple_of then checks the string after the pattern), each is written
        # in the annotation as its own Field(...), in the design's order.
        groups = [g for g in (self._constraints(model, name, [m]) for m in info.metadata) if g]
        constraints = _once(model, name, [kw for group in groups for kw in group])
        if _in_field_order(constraints):
            kwargs.extend(constraints)
        else:
            fields = ", ".join(
                f"{self._pydantic_name('Field')}({', '.join(group)})" for group in groups
            )
            annotation = f"{self._typing_name('Annotated')}[{annotation}, {fields}]"
        if not kwargs:
            return FieldSource(name, annotation, None)
        if not required and info.default_factory is None and len(kwargs) == 1:
            return FieldSource(name, annotation, kwargs[0])
        return FieldSource(name, annotation, f"{self._pydantic_name('Field')}({', '.join(kwargs)})")

    def _info_kwargs(
        self, model: str, name: str, info: FieldInfo, *, constraints: bool = True
    ) -> list[str]:
        """The ``Field(...)`` arguments of ``info`` other than its default and alias: those a
        ``Field`` inside a nested ``Annotated[...]`` gives as well (its constraints too, unless
        ``constraints`` is false)."""
        kwargs: list[str] = []
        for attr in ("title", "description"):
            value = getattr(info, attr)
            if value is not None:
                kwargs.append(f"{attr}={value!r}")
        if info.examples is not None:
            kwargs.append(f"examples={self._literal(model, name, info.examples)}")
        if info.json_schema_extra is not None:
            if callable(info.json_schema_extra):
                raise UnsupportedType(model, name, "a callable json_schema_extra is not supported")
            kwargs.append(f"json_schema_extra={self._literal(model, name, info.json_schema_extra)}")
        if info.discriminator is not None:
            if not isinstance(info.discriminator, str):
                raise UnsupportedType(model, name, "only string discriminators are supported")
            kwargs.append(f"discriminator={info.discriminator!r}")
        if info.validate_default is not None:
            kwargs.append(f"validate_default={info.validate_default!r}")
        for flag in ("exclude", "frozen", "deprecated", "exclude_if", "field_title_generator"):
            if getattr(info, flag, None):
                raise UnsupportedType(model, name, f"Field({flag}=...) is not supported")
        if constraints:
            kwargs.extend(_once(model, name, self._constraints(model, name, info.metadata)))
        return kwargs

    def _constraints(self, model: str, name: str, metadata: list[Any]) -> list[str]:
        kwargs: list[str] = []
        for item in metadata:
            if isinstance(item, _CONSTRAINTS):
                (attr,) = [a for a in item.__dataclass_fields__]
                kwargs.append(f"{attr}={self._bound(model, name, getattr(item, attr))}")
            elif isinstance(item, annotated_types.Interval | annotated_types.Len):
                for attr in item.__dataclass_fields__:
                    value = getattr(item, attr)
                    if value is not None:
                        kwargs.append(f"{attr}={self._bound(model, name, value)}")
            elif isinstance(item, pydantic.StringConstraints):
                for attr in item.__dataclass_fields__:
                    value = getattr(item, attr)
                    if value is None:
                        continue
                    if attr not in _FIELD_KWARGS:
                        raise UnsupportedType(
                            model, name, f"string constraint {attr} is not supported"
                        )
                    kwargs.append(f"{attr}={self._bound(model, name, value)}")
            elif type(item).__name__ == "_PydanticGeneralMetadata":
                for attr, value in vars(item).items():
                    if attr not in _FIELD_KWARGS:
                        raise UnsupportedType(model, name, f"constraint {attr} is not supported")
                    kwargs.append(f"{attr}={self._bound(model, name, value)}")
            elif item is None:
                continue  # conint(), confloat()... leave None for the constraints not given
            elif (
                isinstance(item, annotated_types.BaseMetadata | pydantic.types.AllowInfNan)
                and len(fields := getattr(item, "__dataclass_fields__", {})) == 1
            ):
                (attr,) = list(fields)
                if attr not in _FIELD_KWARGS:
                    raise UnsupportedType(
                        model, name, f"constraint {type(item).__name__} is not supported"
                    )
                kwargs.append(f"{attr}={self._bound(model, name, getattr(item, attr))}")
            else:
                raise UnsupportedType(
                    model, name, f"annotation metadata {type(item).__name__} is not supported"
                )
        return kwargs

    def _annotation(self, model: str, name: str, tp: Any) -> str:
        if tp is None or tp is type(None):
            return "None"
        if tp is Any:
            return self._typing_name("Any")
        # Only classes are looked up: ``Annotated[int, {"unit": "cm"}]`` cannot be hashed.
        if isinstance(tp, type) and tp in _SIMPLE:
            simple = _SIMPLE[tp]
            if simple is None:
                raise UnsupportedType(model, name, "bytes have no JSON form; use str (base64)")
            return self._builtin_name(simple)
        if isinstance(tp, type) and tp in _STDLIB:
            module, attr = _STDLIB[tp]
            self.imports.add(module)
            return f"_{module}.{attr}"
        origin = typing.get_origin(tp)
        args = typing.get_args(tp)
        if origin is typing.Annotated:
            inner = self._annotation(model, name, args[0])
            # One Field(...) per item, in their order: pydantic applies them one after the
            # other (a constraint after a discriminator applies to the tagged union; merged
            # into one Field, constraints come first and the discriminator then fails).
            parts: list[str] = []
            for meta in args[1:]:
                if isinstance(meta, FieldInfo):
                    given = [a for a in _OUTER_ONLY if getattr(meta, a) is not None]
                    if meta.default is not PydanticUndefined:
                        given.insert(0, "default")
                    if given:
                        raise UnsupportedType(
                            model,
                            name,
                            f"Field({given[0]}=...) has no effect inside a nested "
                            "Annotated[...] (pydantic ignores it there); remove it, or give "
                            "it in the field's own Field(...)",
                        )
                    # All of it: a discriminator or a title there was once dropped.
                    kwargs = self._info_kwargs(model, name, meta)
                else:
                    kwargs = self._constraints(model, name, [meta])
                if kwargs:
                    parts.append(f"{self._pydantic_name('Field')}({', '.join(kwargs)})")
            if not parts:
                return inner
            return f"{self._typing_name('Annotated')}[{inner}, {', '.join(parts)}]"
        if origin in (typing.Union, types.UnionType):
            return " | ".join(self._annotation(model, name, a) for a in args)
        if origin is typing.Literal:
            for value in args:
                if not (value is None or isinstance(value, str | int | bool | enum.Enum)):
                    raise UnsupportedType(
                        model,
                        name,
                        "Literal values must be strings, integers, booleans, None or enum "
                        f"members (not {type(value).__name__})",
                    )
            literal = self._typing_name("Literal")
            return f"{literal}[{', '.join(self._literal(model, name, a) for a in args)}]"
        if origin is list:
            (item,) = args or (Any,)
            return f"{self._builtin_name('list')}[{self._annotation(model, name, item)}]"
        if origin is dict:
            key, value = args or (str, Any)
            if key is not str:
                raise UnsupportedType(model, name, "dict keys must be str (JSON object keys)")
            mapping, key_type = self._builtin_name("dict"), self._builtin_name("str")
            return f"{mapping}[{key_type}, {self._annotation(model, name, value)}]"
        if origin is not None:
            shown = str(tp).replace("typing.", "")
            raise UnsupportedType(
                model, name, f"type {shown} is not supported; use list[...] or dict[str, ...]"
            )
        if isinstance(tp, type) and issubclass(tp, BaseModel | enum.Enum):
            return self._class_ref(tp)
        exported = getattr(tp, "__name__", None)
        if isinstance(exported, str) and getattr(pydantic, exported, None) is tp:
            return self._pydantic_name(exported)
        shown = getattr(tp, "__qualname__", repr(tp))
        raise UnsupportedType(model, name, f"type {shown} is not supported in generated code")

    def _bound(self, model: str, name: str, value: Any) -> str:
        """A constraint's value as Python the generated module can evaluate: ``repr`` spells
        infinity ``inf`` and a date ``datetime.date(...)``, names the module does not have."""
        kind = type(value)
        if value is None or kind in (bool, int, str):
            return _scalar(value)
        if kind is float:
            return repr(value) if math.isfinite(value) else f'float("{value}")'
        written = self._stdlib_value(value)
        if written is None:
            raise UnsupportedType(
                model, name, f"a constraint bound of type {kind.__name__} is not supported"
            )
        return written

    def _stdlib_value(self, value: Any) -> str | None:
        """A ``Decimal``, ``UUID``, date, time, datetime or timedelta as exact Python through
        the module's private imports, or None for any other value."""
        kind = type(value)
        if kind is decimal.Decimal:
            self.imports.add("decimal")
            return f'_decimal.Decimal("{value}")'
        if kind is uuid.UUID:
            self.imports.add("uuid")
            return f'_uuid.UUID("{value}")'
        if kind in (datetime.datetime, datetime.date, datetime.time):
            self.imports.add("datetime")
            return f'_datetime.{kind.__name__}.fromisoformat("{value.isoformat()}")'
        if kind is datetime.timedelta:
            self.imports.add("datetime")
            # Its own three integers: total_seconds() is a float, inexact past ~285 years.
            parts = ("days", "seconds", "microseconds")
            given = [f"{part}={getattr(value, part)}" for part in parts if getattr(value, part)]
            return f"_datetime.timedelta({', '.join(given)})"
        return None

    def _typed_default(self, model: str, name: str, annotation: Any, default: Any) -> Any:
        """The default as a value of the field's type, which the generated module can be
        type-checked with (mypy --strict).

        pydantic does not validate defaults: ``origin: Point = {"x": 0}``, ``color: Color =
        "red"`` and ``when: date = "2024-01-01"`` are accepted as they are, and written so
        they failed the generated module's type check. Such a default is validated against
        the field's type and written as what it stands for (``Point(x=0)``, ``Color.red``, a
        date), when that means the same JSON (the schema's ``default`` is unchanged); an
        ``int`` for a ``float`` keeps its spelling (``1`` is a float to a type checker, and
        ``1.0`` would change the schema). A default that is no value of the type at all is
        refused: generated code could not be type-checked.
        """
        if default is None or _fits(annotation, default):
            return default
        try:
            value = pydantic.TypeAdapter(annotation).validate_python(default)
            same = pydantic_core.to_json(value) == pydantic_core.to_json(default)
        except pydantic.ValidationError as exc:
            shown = getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")
            raise UnsupportedType(
                model,
                name,
                f"default {default!r} is not a value of the field's type {shown} "
                f"({exc.errors()[0]['msg']}); pydantic does not check defaults, but generated "
                "types are type-checked: give a default of the field's type (or "
                "Field(validate_default=True) to have it checked on use)",
            ) from None
        except Exception:  # a type pydantic cannot validate with: written as it is
            return default
        return value if same else default

    def _literal(self, model: str, name: str | None, value: Any) -> str:
        if isinstance(value, enum.Enum):
            return f"{self._class_ref(type(value))}.{value.name}"
        if isinstance(value, BaseModel):
            # A model instance default: its class called with the fields it was given (by
            # alias, which is what the generated class's __init__ takes).
            cls = type(value)
            given = []
            for field_name, info in cls.model_fields.items():
                if field_name in value.model_fields_set:
                    key = info.alias if info.alias and info.alias.isidentifier() else field_name
                    given.append(f"{key}={self._literal(model, name, getattr(value, field_name))}")
            return f"{self._class_ref(cls)}({', '.join(given)})"
        if value is None or isinstance(value, bool | int | str):
            return _scalar(value)
        if isinstance(value, float):
            if not math.isfinite(value):
                raise UnsupportedType(model, name, "NaN and infinite defaults are not supported")
            return repr(value)
        written = self._stdlib_value(value)
        if written is not None:
            return written
        if isinstance(value, list | tuple):
            items = [self._literal(model, name, v) for v in value]
            text = ", ".join(items)
            return (
                f"[{text}]"
                if isinstance(value, list)
                else f"({text}{',' if len(items) == 1 else ''})"
            )
        if isinstance(value, dict):
            if not all(isinstance(k, str) for k in value):
                raise UnsupportedType(model, name, "dict literals must have string keys")
            return (
                "{"
                + ", ".join(f"{k!r}: {self._literal(model, name, v)}" for k, v in value.items())
                + "}"
            )
        raise UnsupportedType(
            model, name, f"default value of type {type(value).__name__} is not supported"
        )


def _fits(annotation: Any, default: Any) -> bool:
    """Whether ``default`` is plainly of the field's (plain class) type, which spares building
    a validator for most defaults."""
    kind = type(default)
    if annotation is Any or kind is annotation or (annotation is float and kind is int):
        return True
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(arm, default) for arm in typing.get_args(annotation))
    # An empty list or dict is a value of every list or dict type.
    return origin is kind and kind in (list, dict) and not default
