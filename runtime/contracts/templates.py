"""Confirmation templates: a Jinja2 sandbox whose every render is bounded work.

Templates come from registry providers and render model-chosen arguments, on the event loop
every run shares, where nothing can interrupt a render once it started. Jinja's own sandbox
stops templates from reaching Python internals but not from working forever (nested loops,
``'x' * 10**9``). This sandbox also counts the work of each render and stops it with
:class:`TemplateLimitError` once it passes a stated budget:

* every loop iteration, call, filter, attribute or item lookup and arithmetic operation spends
  one of :data:`~.limits.MAX_TEMPLATE_OPERATIONS`;
* the output, and every string or list the template builds, is held to
  :data:`~.limits.MAX_TEMPLATE_OUTPUT_CHARS` — checked *before* an operation that could build a
  larger one (repetition, padding widths, replacements, format widths), never after;
* numbers are held to :data:`MAX_INTEGER_BITS`.

To make that possible the language is narrowed slightly: methods of strings, lists and
dictionaries are limited to an allowlist (``args.get``, ``items``, ``upper``, ``startswith``...;
padding and joining go through the filters, which are checked), and ``namespace``, ``lipsum``
and ``random`` are not available. Templates are checked when a contract is compiled
(:func:`check_template`): a template that does not parse never reaches a run.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
from collections.abc import (
    Callable,
    ItemsView,
    Iterable,
    Iterator,
    KeysView,
    Mapping,
    MappingView,
    ValuesView,
)
from contextvars import ContextVar
from decimal import Context, Decimal, DecimalException
from typing import Any

from jinja2 import Environment, StrictUndefined, Template, Undefined, nodes, pass_environment
from jinja2.exceptions import FilterArgumentError, SecurityError, TemplateRuntimeError
from jinja2.filters import _GroupTuple, ignore_case, make_attrgetter, make_multi_attrgetter
from jinja2.sandbox import (
    ImmutableSandboxedEnvironment,
    SandboxedEscapeFormatter,
    SandboxedFormatter,
)
from jinja2.visitor import NodeTransformer
from markupsafe import Markup, soft_str

from agentgen.runtime.contracts.codecs import encode_exact
from agentgen.runtime.contracts.limits import (
    MAX_TEMPLATE_CHARS,
    MAX_TEMPLATE_OPERATIONS,
    MAX_TEMPLATE_OUTPUT_CHARS,
    MAX_VALUE_DEPTH,
)
from agentgen.runtime.visible import visible

__all__ = [
    "MAX_INTEGER_BITS",
    "MAX_ROUND_DIGITS",
    "TemplateFilterError",
    "TemplateLimitError",
    "check_template",
    "render_template",
    "tojson",
]

#: Size of the integers a template may compute (about 2,500 decimal digits).
MAX_INTEGER_BITS = 8192

_ITER = "__agentgen_iter__"
_CONCAT = "__agentgen_concat__"
_CHARGE = "__agentgen_charge__"
#: The sandbox's own globals: a render's variables never replace them (an argument named
#: ``__agentgen_iter__`` would otherwise break every loop of the template).
_INTERNAL = frozenset({_ITER, _CONCAT, _CHARGE})


class TemplateLimitError(SecurityError):
    """A template went past its stated budget (operations, output size, integer size)."""


class _Budget:
    def __init__(self) -> None:
        self.left = MAX_TEMPLATE_OPERATIONS

    def spend(self, operations: int) -> None:
        self.left -= operations
        if self.left < 0:
            raise TemplateLimitError(
                f"the template did more than {MAX_TEMPLATE_OPERATIONS} operations (loop "
                "iterations, calls, filters, lookups, arithmetic); that is its limit"
            )


_BUDGET: ContextVar[_Budget | None] = ContextVar("agentgen_template_budget", default=None)


def _spend(operations: int = 1) -> None:
    budget = _BUDGET.get()
    if budget is None:
        raise TemplateLimitError("templates are rendered only through render_template")
    budget.spend(operations)


def _cost(value: Any) -> int:
    """Extra operations for work proportional to a value's size: scanning, sorting or
    serialising it costs one operation per 32 characters of text or per 4 items."""
    if isinstance(value, str):
        return len(value) >> 5
    if isinstance(value, list | tuple | dict | MappingView):
        return len(value) >> 2
    return 0


def _charge(value: Any) -> Any:
    """What comparisons and ``in`` tests see: their operands, charged by size, a float read
    as the decimal it is written as (:func:`_compared`)."""
    _spend(_cost(value))
    return _compared(value)


def _compared(value: Any) -> Any:
    """``value`` as comparisons read it: a finite float as the decimal it is written as (each
    item of a list, a tuple or an iterator too, and each key of a dict, for ``in``). Number
    arguments are exact decimals, and Python compares a ``Decimal`` with a float's binary
    value: ``amount == 0.1`` was false and ``amount < 0.1`` true for an amount of ``0.1``. Two
    floats compare as before (the shortest decimals of doubles keep their order).

    Iterators are what ``map``, ``select``, ``reject``, ``reverse`` and ``unique`` return:
    ``amount in items | map(attribute="price")`` read each price by its binary value (false
    for an amount of 0.1 and a price of 0.1) where ``... | list`` read it as written. Their
    items are read lazily, as ``in`` reads them."""
    if type(value) is float:
        return Decimal(repr(value)) if math.isfinite(value) else value
    if isinstance(value, list | tuple) and any(type(item) is float for item in value):
        items = [_compared(item) if type(item) is float else item for item in value]
        # A tuple stays one: it orders against other tuples and hashes, as the ordering
        # filters' keys must (``[(1, 0.5), (1, 2)] | sort`` raised TypeError: tuple < list).
        return tuple(items) if isinstance(value, tuple) else items
    if isinstance(value, dict) and any(type(key) is float for key in value):
        return {(_compared(k) if type(k) is float else k): v for k, v in value.items()}
    if isinstance(value, KeysView | ValuesView | ItemsView):
        # ``keys()``, ``values()``, ``items()`` of a dict, read as the list or dict they view:
        # ``amount in prices.values()`` compared each float price by its binary value, and
        # ``0.1 in d.keys()`` was false for a key 0.1 (the left 0.1 read as written, the
        # keys not).
        # Each item as comparisons read it: an item of ``items()`` is a (key, value) tuple.
        return [_compared(item) for item in value]
    if isinstance(value, Iterator):
        return _compared_items(value)
    return value


def _compared_items(items: Iterator[Any]) -> Iterator[Any]:
    for item in items:
        yield _compared(item) if type(item) is float else item


def _too_big(size: int, what: str = "value") -> TemplateLimitError:
    return TemplateLimitError(
        f"the template would build a {what} of {size} characters or items; the limit is "
        f"{MAX_TEMPLATE_OUTPUT_CHARS}"
    )


def _check_size(value: Any) -> Any:
    if isinstance(value, str | list | tuple | dict) and len(value) > MAX_TEMPLATE_OUTPUT_CHARS:
        raise _too_big(len(value))
    if isinstance(value, int) and value.bit_length() > MAX_INTEGER_BITS:
        raise TemplateLimitError(f"the template computed an integer over {MAX_INTEGER_BITS} bits")
    return value


def _bound(size: int, what: str = "value") -> None:
    if size > MAX_TEMPLATE_OUTPUT_CHARS:
        raise _too_big(size, what)


_NUMBER = re.compile(r"\d+")


def _check_format(spec: str, arguments: Iterable[Any] = ()) -> None:
    """Padding and precision in a format string cost what they say: hold their sum (and any
    width passed as an argument) to the output limit before formatting."""
    total = 0
    for digits in _NUMBER.findall(spec):
        if len(digits) > 6:
            raise _too_big(10 ** len(digits), "formatted string")
        total += int(digits)
    for argument in arguments:
        if isinstance(argument, int) and not isinstance(argument, bool):
            total += max(argument, 0) if argument < 10**7 else 10**7
    _bound(total, "formatted string")


# --------------------------------------------------------------------------- operators


def _length(value: Any) -> int | None:
    return len(value) if isinstance(value, str | list | tuple) else None


def _multiply(left: Any, right: Any) -> Any:
    for seq, times in ((left, right), (right, left)):
        size = _length(seq)
        if size is not None and isinstance(times, int):
            _bound(size * max(times, 0))
    if (
        isinstance(left, int)
        and isinstance(right, int)
        and left.bit_length() + right.bit_length() > MAX_INTEGER_BITS
    ):
        raise TemplateLimitError(
            f"the template would compute an integer over {MAX_INTEGER_BITS} bits"
        )
    return left * right


def _power(left: Any, right: Any) -> Any:
    if (
        isinstance(left, int)
        and isinstance(right, int)
        and right > 0
        and abs(left) > 1
        and left.bit_length() * right > MAX_INTEGER_BITS
    ):
        raise TemplateLimitError(
            f"the template would compute an integer over {MAX_INTEGER_BITS} bits"
        )
    return left**right


def _add(left: Any, right: Any) -> Any:
    a, b = _length(left), _length(right)
    if a is not None and b is not None:
        _bound(a + b)
    return left + right


def _modulo(left: Any, right: Any) -> Any:
    if isinstance(left, str):
        _check_format(left, right if isinstance(right, tuple) else (right,))
        # ``"%s" % amount`` writes the decimal as ``{{ }}`` does (see :func:`_shown`); a
        # mapping's values are read so only when named (``"%(total)s"``), not copied whole.
        right = _ShownMapping(right) if isinstance(right, Mapping) else _shown(right)
    return left % right


_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "*": _multiply,
    "**": _power,
    "+": _add,
    "%": _modulo,
}


def _exact_operands(left: Any, right: Any) -> tuple[Any, Any]:
    """A float beside a ``Decimal`` read as the decimal it is written as (see
    ``BudgetedSandbox.call_binop``)."""
    if isinstance(left, Decimal) and type(right) is float:
        return left, Decimal(repr(right))
    if isinstance(right, Decimal) and type(left) is float:
        return Decimal(repr(left)), right
    return left, right


def _concat(*parts: Any) -> str:
    """``a ~ b``: the parts as text, joined (their total size checked first)."""
    texts = [part if isinstance(part, str) else str(_written(part)) for part in parts]
    _bound(sum(len(text) for text in texts))
    return "".join(texts)


def _iterate(iterable: Any) -> Iterator[Any]:
    """What every ``{% for %}`` loops over: one operation per item."""
    for item in iterable:
        _spend()
        yield item


def _range(*args: int) -> range:
    numbers = range(*args)
    _bound(len(numbers), "range")
    return numbers


# --------------------------------------------------------------------------- filters


def tojson(value: Any) -> str:
    """JSON of a value, numbers written exactly as parsed (``Decimal`` arguments included);
    inside a render, every value written costs its share of the budget."""
    budget = _BUDGET.get()
    if budget is not None:
        budget.spend(1 + _cost(value))
    if isinstance(value, Decimal):
        return encode_exact(value)
    if isinstance(value, Mapping):
        items = sorted(((str(k), v) for k, v in value.items()), key=lambda kv: kv[0])
        return "{" + ", ".join(f"{tojson(k)}: {tojson(v)}" for k, v in items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(tojson(v) for v in value) + "]"
    text: str = json.dumps(value, ensure_ascii=False, default=str)
    return text


def _text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def _width(value: Any) -> int:
    return value if isinstance(value, int) else 0


def _pre_center(value: Any, width: Any = 80, *_: Any) -> None:
    _bound(max(len(_text(value)), _width(width)))


def _pre_indent(value: Any, width: Any = 4, *_: Any, **__: Any) -> None:
    text = _text(value)
    pad = len(width) if isinstance(width, str) else _width(width)
    _bound(len(text) + pad * (text.count("\n") + 1))


def _pre_wordwrap(value: Any, width: Any = 79, *args: Any, **kwargs: Any) -> None:
    text = _text(value)
    wrapstring = kwargs.get("wrapstring", args[1] if len(args) > 1 else None) or "\n"
    breaks = len(text) // max(_width(width), 1) + 1
    _bound(len(text) + breaks * len(_text(wrapstring)))


def _pre_replace(value: Any, old: Any, new: Any, count: Any = None, *_: Any) -> None:
    text, old, new = _text(value), _text(old), _text(new)
    found = text.count(old) if old else len(text) + 1
    if isinstance(count, int) and count >= 0:
        found = min(found, count)
    _bound(len(text) + found * len(new))


def _pre_join(value: Any, d: Any = "", *_: Any, **__: Any) -> None:
    size = _length(value)
    if size is not None:
        _bound(size * len(_text(d)))


def _pre_format(value: Any, *args: Any, **kwargs: Any) -> None:
    _check_format(_text(value), [*args, *kwargs.values()])


def _pre_count(value: Any, count: Any = 0, *_: Any, **__: Any) -> None:
    _bound(_width(count))


#: Digits ``round`` may keep or drop: as many as the largest integer a template may compute
#: has. Python rounds an integer to ``-n`` digits, and Jinja's ``floor`` and ``ceil`` methods
#: scale by ``10 ** n``, in time and memory that grow with ``n``: ``round(-10**9)`` never
#: finished.
MAX_ROUND_DIGITS = len(str(1 << MAX_INTEGER_BITS))


def _pre_round(value: Any, precision: Any = 0, *_: Any, **kwargs: Any) -> None:
    precision = kwargs.get("precision", precision)
    if isinstance(precision, int) and abs(precision) > MAX_ROUND_DIGITS:
        raise TemplateLimitError(
            f"the template would round to {precision} digits; the limit is {MAX_ROUND_DIGITS} "
            "either way"
        )


_PRECHECKS: dict[str, Callable[..., None]] = {
    "center": _pre_center,
    "indent": _pre_indent,
    "wordwrap": _pre_wordwrap,
    "replace": _pre_replace,
    "join": _pre_join,
    "format": _pre_format,
    "batch": _pre_count,
    "slice": _pre_count,
    "round": _pre_round,
}

# --------------------------------------------------------------------------- exact ordering
#
# Jinja's ordering filters compare values with Python's operators, which read a float by its
# binary value against a ``Decimal`` (a schema-typed number argument): ``[amount, 0.1] | max``
# picked the literal for an amount of 0.1 (0.1000000000000000055...), ``sort`` put a 0.3
# literal before an amount of 0.3, ``unique`` kept both, and ``sum`` raised ``TypeError``. These
# are Jinja's filters with each key read as comparisons read it (:func:`_compared`) and the sum
# added as ``+`` adds; what they return are the template's own values, unchanged.


def _exact_key(case_sensitive: bool) -> Callable[[Any], Any]:
    if case_sensitive:
        return _compared
    return lambda value: _compared(ignore_case(value))


@pass_environment
def _sort(
    environment: Environment,
    value: Iterable[Any],
    reverse: bool = False,
    case_sensitive: bool = False,
    attribute: str | int | None = None,
) -> list[Any]:
    key = make_multi_attrgetter(environment, attribute, postprocess=_exact_key(case_sensitive))
    return sorted(value, key=key, reverse=reverse)


def _min_or_max(
    environment: Environment,
    value: Iterable[Any],
    pick: Callable[..., Any],
    case_sensitive: bool,
    attribute: str | int | None,
) -> Any:
    items = list(value)
    if not items:
        return environment.undefined("No aggregated item, sequence was empty.")
    return pick(
        items, key=make_attrgetter(environment, attribute, postprocess=_exact_key(case_sensitive))
    )


@pass_environment
def _min(
    environment: Environment,
    value: Iterable[Any],
    case_sensitive: bool = False,
    attribute: str | int | None = None,
) -> Any:
    return _min_or_max(environment, value, min, case_sensitive, attribute)


@pass_environment
def _max(
    environment: Environment,
    value: Iterable[Any],
    case_sensitive: bool = False,
    attribute: str | int | None = None,
) -> Any:
    return _min_or_max(environment, value, max, case_sensitive, attribute)


@pass_environment
def _unique(
    environment: Environment,
    value: Iterable[Any],
    case_sensitive: bool = False,
    attribute: str | int | None = None,
) -> Iterator[Any]:
    key = make_attrgetter(environment, attribute, postprocess=_exact_key(case_sensitive))
    seen: set[Any] = set()
    for item in value:
        found = key(item)
        if found not in seen:
            seen.add(found)
            yield item


def _dictsort(
    value: Mapping[Any, Any],
    case_sensitive: bool = False,
    by: str = "key",
    reverse: bool = False,
) -> list[tuple[Any, Any]]:
    if by not in ("key", "value"):
        raise FilterArgumentError('You can only sort by either "key" or "value"')
    position = 0 if by == "key" else 1
    key = _exact_key(case_sensitive)
    return sorted(value.items(), key=lambda item: key(item[position]), reverse=reverse)


@pass_environment
def _groupby(
    environment: Environment,
    value: Iterable[Any],
    attribute: str | int,
    default: Any = None,
    case_sensitive: bool = False,
) -> list[tuple[Any, list[Any]]]:
    key = make_attrgetter(
        environment, attribute, postprocess=_exact_key(case_sensitive), default=default
    )
    grouper = make_attrgetter(environment, attribute, default=default)
    groups = [list(items) for _, items in itertools.groupby(sorted(value, key=key), key)]
    # Each group named by its first item's own value, as Jinja names case-insensitive groups.
    return [_GroupTuple(grouper(items[0]), items) for items in groups]


@pass_environment
def _sum(
    environment: Environment,
    iterable: Iterable[Any],
    attribute: str | int | None = None,
    start: Any = 0,
) -> Any:
    if isinstance(start, str):
        raise TypeError("sum() can't sum strings [use ''.join(seq) instead]")  # as sum() says
    values = (
        iterable if attribute is None else map(make_attrgetter(environment, attribute), iterable)
    )
    total = start
    for item in values:
        total = _check_size(_add(*_exact_operands(total, item)))
    return total


def _divisibleby(value: Any, num: Any) -> bool:
    """``is divisibleby``, the remainder taken as ``%`` takes it: ``amount is divisibleby 0.05``
    raised ``TypeError`` for an exact number argument. Through the operator's own checks
    (:func:`_modulo`): on a string ``%`` formats, and ``"%999999999d" is divisibleby 1`` built
    its gigabyte before the size check refused it."""
    left, right = _exact_operands(value, num)
    return bool(_check_size(_modulo(left, right)) == 0)


def _format(value: Any, *args: Any, **kwargs: Any) -> str:
    """``| format``: Jinja's, formatting through ``%`` (:func:`_modulo`), so that exact
    decimals are written as numbers and a mapping's values are read only when named."""
    if args and kwargs:
        raise FilterArgumentError("can't handle positional and keyword arguments at the same time")
    # soft_str, as Jinja's: a Markup string stays one, and its % escapes what it writes.
    text: str = _modulo(soft_str(_shown(value)), kwargs or args)
    return text


@pass_environment
def _join(
    environment: Environment, value: Iterable[Any], d: str = "", attribute: str | int | None = None
) -> str:
    """``| join``: Jinja's, each item written as ``{{ }}`` writes it (:func:`_shown`), after
    the attribute is read (only what is joined is converted)."""
    if isinstance(value, str | Mapping):
        items: Iterable[Any] = value  # a string's characters, a mapping's keys: as before
    else:
        items = value if attribute is None else map(make_attrgetter(environment, attribute), value)
    # soft_str, as Jinja's: a Markup separator escapes the items it joins (a Markup item is
    # kept), as it did before decimals were written here.
    return soft_str(d).join(soft_str(_shown(item)) for item in items)


_EXACT_FILTERS: dict[str, Callable[..., Any]] = {
    "format": _format,
    "join": _join,
    "sort": _sort,
    "min": _min,
    "max": _max,
    "unique": _unique,
    "dictsort": _dictsort,
    "groupby": _groupby,
    "sum": _sum,
}


#: Filters that make text of their arguments with ``str`` (Jinja's ``soft_str``): they get
#: exact decimals as :class:`_Number`, written as ``{{ }}`` writes them (:func:`_shown`). What
#: they convert they write whole, so converting costs no more than writing. ``format`` and
#: ``join`` are :func:`_format` and :func:`_join`.
_TEXT_FILTERS = frozenset(
    {"capitalize", "center", "e", "escape", "forceescape", "indent", "lower"}
    | {"replace", "safe", "string", "striptags", "title", "trim", "truncate", "upper"}
    | {"urlencode", "wordcount", "wordwrap", "xmlattr"}
)


#: Values a text filter gets as the text ``{{ }}`` writes for them (``bool`` included, an
#: ``int``: ``{{ true }}`` writes ``True``).
_NUMBERS = (int, float, Decimal)


#: Filters whose first argument is a context, environment or evaluation context.
_PASSES = ("context", "environment", "eval_context")


#: Tests that compare their operands (``is eq 0.1``, ``selectattr("price", "gt", 9.5)``):
#: they read floats as comparisons do (:func:`_compared`).
_COMPARING_TESTS = frozenset(
    {"==", "!=", "<", "<=", ">", ">=", "eq", "equalto", "ne", "lt", "lessthan", "le", "gt"}
    | {"greaterthan", "ge", "in"}
)


class TemplateFilterError(TemplateRuntimeError):
    """A filter or test given a value of a kind it cannot take (``{{ ids | indent }}`` for a
    list): names the filter, what it takes and what it got. Jinja's own error said only
    ``'list' object has no attribute 'splitlines'``, naming neither."""


_TEXT = "text (a string or a number)"
_MAPPING = "a mapping (a JSON object)"
_SEQUENCE = "a list (or a string, or an object's keys)"
_NUMBER_TAKEN = "a number"
#: What the filters and tests whose misuse is common take, in a template author's words.
_TAKES: dict[str, str] = {
    **dict.fromkeys(
        {"capitalize", "center", "format", "indent", "lower", "replace", "striptags", "title"}
        | {"trim", "truncate", "upper", "wordcount", "wordwrap"},
        _TEXT,
    ),
    **dict.fromkeys(("xmlattr", "dictsort", "items"), _MAPPING),
    **dict.fromkeys(
        {"batch", "first", "groupby", "join", "last", "length", "count", "list", "map", "max"}
        | {"min", "reject", "rejectattr", "reverse", "select", "selectattr", "slice", "sort"}
        | {"sum", "unique"},
        _SEQUENCE,
    ),
    **dict.fromkeys(("abs", "filesizeformat", "round", "divisibleby"), _NUMBER_TAKEN),
}


def _kind_of(value: Any) -> str:
    """What a template value is, in JSON's words and by size, never its content: the message
    reaches logs and spans, and an argument's value may be private."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float | Decimal):
        return "a number"
    if isinstance(value, str):
        return f"a string of {len(value)} character{'s' if len(value) != 1 else ''}"
    if isinstance(value, Mapping):
        return f"an object with {len(value)} key{'s' if len(value) != 1 else ''}"
    if isinstance(value, list | tuple):
        return f"a list of {len(value)} item{'s' if len(value) != 1 else ''}"
    return f"a {type(value).__name__}"


def _misused(name: str, test: bool, value: Any, exc: Exception | None) -> TemplateFilterError:
    what = "test" if test else "filter"
    kind = _kind_of(value)
    takes = _TAKES.get(name)
    said = f" ({type(exc).__name__}: {exc})" if exc is not None else ""
    if takes is None:
        return TemplateFilterError(f"the {what} {name!r} cannot take {kind}{said}")
    if _taken(takes, value):  # the value is of its kind: what the filter was given with it
        return TemplateFilterError(
            f"the {what} {name!r} failed on {kind}{said}; check the arguments given to it"
        )
    advice = ""
    if takes is _TEXT and isinstance(value, list | tuple):
        advice = f"; join the list's items into text first: | join(', ') | {name}"
    elif takes is _MAPPING and isinstance(value, list | tuple):
        advice = "; pass it an object, or loop over the list's items"
    return TemplateFilterError(f"the {what} {name!r} takes {takes}, not {kind}{said}{advice}")


def _taken(takes: str, value: Any) -> bool:
    """Whether ``value`` is of the kind a filter that ``takes`` it expects."""
    number = isinstance(value, int | float | Decimal) and not isinstance(value, bool)
    if takes is _TEXT:
        return isinstance(value, str) or number
    if takes is _MAPPING:
        return isinstance(value, Mapping)
    if takes is _SEQUENCE:
        return isinstance(value, Iterable)
    return number


def _refused(name: str, value: Any) -> bool:
    """Whether ``value`` is of a kind the filter ``name`` cannot take, known before it runs:
    the filters that return an iterator (``items``, ``selectattr``, ``unique``...) failed only
    where it was read, under another filter's name, and ``reverse`` said only "argument must
    be iterable"."""
    takes = _TAKES.get(name)
    if isinstance(value, Undefined):
        return False  # the strict undefined's own error names the variable
    if takes is _MAPPING:
        return not isinstance(value, Mapping)
    if takes is _SEQUENCE:
        return not isinstance(value, Iterable)
    return False


def _budgeted(name: str, function: Any, *, test: bool = False) -> Callable[..., Any]:
    precheck = _PRECHECKS.get(name)
    passes = getattr(function, "jinja_pass_arg", None)
    skip = 1 if passes is not None and passes.name in _PASSES else 0
    compares = test and name in _COMPARING_TESTS

    writes = not test and name in _TEXT_FILTERS

    @functools.wraps(function)
    def filter_(*args: Any, **kwargs: Any) -> Any:
        given = args[skip] if len(args) > skip else None
        if len(args) > skip and _refused(name, given):
            raise _misused(name, test, given, None)
        try:
            return _filtered(args, kwargs)
        except (TypeError, AttributeError, ValueError) as exc:
            # Jinja's filters take their value for what they expect (a string's splitlines, a
            # mapping's items): another kind failed with Python's words alone. A lazy value
            # (map, select...) fails where it is read, for what made it: left as it is; so are
            # decimal arithmetic's errors (explained by the caller) and this sandbox's own.
            if isinstance(exc, TemplateFilterError | DecimalException) or isinstance(
                given, Iterator
            ):
                raise
            raise _misused(name, test, given, exc) from None

    def _filtered(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        _spend(1 + (_cost(args[skip]) if len(args) > skip else 0))
        if compares:
            args = tuple(_compared(arg) for arg in args)
        if writes and len(args) > skip and isinstance(args[skip], _NUMBERS):
            # Jinja's truncate, indent and wordwrap take their value for a string (len, +=,
            # splitlines): on a number they failed with a bare TypeError or AttributeError.
            # They get the number as {{ }} writes it, which is what a person confirms.
            args = (*args[:skip], str(_visible(args[skip])), *args[skip + 1 :])
        if writes:
            args = (*args[:skip], *(_shown(arg) for arg in args[skip:]))
            kwargs = {key: _shown(arg) for key, arg in kwargs.items()}
        if precheck is not None:
            precheck(*args[skip:], **kwargs)
        result = _check_size(function(*args, **kwargs))
        _spend(_cost(result))
        return result

    return filter_


# --------------------------------------------------------------------------- environment

#: Methods of argument values a template may call; anything else (``ljust``, ``zfill``,
#: ``expandtabs``, mutating methods...) is refused like a private attribute.
_SAFE_METHODS: dict[type, frozenset[str]] = {
    dict: frozenset({"get", "items", "keys", "values"}),
    list: frozenset({"count", "index"}),
    tuple: frozenset({"count", "index"}),
    str: frozenset(
        {
            "capitalize",
            "casefold",
            "count",
            "endswith",
            "find",
            "index",
            "isalnum",
            "isalpha",
            "isdigit",
            "islower",
            "isspace",
            "isupper",
            "lower",
            "lstrip",
            "partition",
            "removeprefix",
            "removesuffix",
            "rfind",
            "rpartition",
            "rstrip",
            "split",
            "splitlines",
            "startswith",
            "strip",
            "title",
            "upper",
        }
    ),
}
_DATA_TYPES = (dict, list, tuple, str, int, float, Decimal, bool)


def _visible(value: Any) -> Any:
    """What ``{{ ... }}`` writes: text with control and format characters but newlines and
    tabs as escapes (:func:`~agentgen.runtime.visible.visible`). Values come from models; a
    prompt a person reads must not carry an escape sequence that rewrites it, nor a bidi
    override that shows ``exe.pdf`` for ``fdp.exe``. The template's own text is left as is.
    Exact decimals are written as numbers (:func:`_written`)."""
    return visible(value, "\n\t") if type(value) is str else _written(value)


#: Decimal exponents (``Decimal.adjusted``) written out in full; beyond them (``1E+40``), a
#: number is written in exponent form, as a float would be, rather than as forty digits.
_PLAIN_EXPONENTS = 20


class _Number(Decimal):
    """An exact decimal a template writes as text: in a list or dict it writes, or passed to
    what makes text of it (``%``, ``.format``, ``string``, ``join``...). Its ``str``,
    ``repr`` and format without a spec are the number (:func:`_plain`); it stays a
    ``Decimal`` for ``%d``, ``%.2f`` and ``{:.1f}``."""

    __slots__ = ()

    def __str__(self) -> str:
        return _plain(self)

    __repr__ = __str__

    def __format__(self, spec: str, context: Context | None = None, /) -> str:
        # A spec without a precision or a type (``""``, ``">10"``, ``"+"``) writes the number
        # as ``str`` would, in exponent form for a quotient: fixed-point is the number as
        # ``{{ }}`` writes it, within the same exponents.
        if _NO_PRESENTATION.fullmatch(spec) and _plain_exponent(self):
            spec += "f"
        return super().__format__(spec) if context is None else super().__format__(spec, context)


#: A format spec of fill, alignment, sign, ``#``, ``0``, width and grouping only.
_NO_PRESENTATION = re.compile(r"(.?[<>=^])?[-+ ]?z?#?0?[0-9]*[,_]?", re.DOTALL)


def _plain_exponent(number: Decimal) -> bool:
    return number.is_finite() and abs(number.adjusted()) <= _PLAIN_EXPONENTS


def _plain(number: Decimal) -> str:
    if _plain_exponent(number):
        return Decimal.__format__(number, "f")
    return Decimal.__str__(number)


def _written(value: Any) -> Any:
    """``value`` as a prompt writes it: an exact decimal argument (or a result of arithmetic
    on one) as the number it is, in a list or a dict too. ``str`` wrote quotients in exponent
    form (``100 / price`` was ``2E+2`` units for a price of 0.5) and a list's decimals as
    ``Decimal('9.5')``, where the same values as floats wrote ``200.0`` and ``9.5``. Other
    values are unchanged (and so is what lies deeper than :data:`~.limits.MAX_VALUE_DEPTH`,
    far past any argument's nesting)."""
    return _plain(value) if type(value) is Decimal else _shown(value)


def _shown(value: Any) -> Any:
    """``value`` for what makes text of it: its exact decimals, in a list or dict too, as
    :class:`_Number` (written as numbers). ``| string``, ``| join``, ``"%s" % x`` and
    ``.format`` wrote ``str(Decimal)`` (``2.0E+2`` for ``100 / price``) where ``{{ }}`` and
    ``~`` write ``200``: a person confirms what is written. Each ``_Number`` writes no more
    than the decimal's own ``str`` and :data:`_PLAIN_EXPONENTS` digits, so the output limits
    hold as they do for any value."""
    return _written_items(value, MAX_VALUE_DEPTH)


def _written_items(value: Any, depth: int) -> Any:
    kind = type(value)
    if kind is Decimal:
        return _Number(value)
    if depth <= 0:
        return value
    if kind is list:
        return [_written_items(item, depth - 1) for item in value]
    if isinstance(value, tuple):
        # ``groupby``'s groups are tuples of their own type, written as plain tuples.
        return tuple(_written_items(item, depth - 1) for item in value)
    if kind is dict:
        return {
            _written_items(k, depth - 1): _written_items(v, depth - 1) for k, v in value.items()
        }
    return value


class _ShownMapping(Mapping[Any, Any]):
    """A mapping ``%`` formats with (``"%(total)s" % args``): each value read as
    :func:`_shown` reads it, when read. Copying the whole mapping for each ``%`` made a loop
    over ``"%(id)s" % args`` copy a megabyte of arguments per operation."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[Any, Any]) -> None:
        self._data = data

    def __getitem__(self, key: Any) -> Any:
        return _shown(self._data[key])

    def __iter__(self) -> Iterator[Any]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        # ``"%s" % mapping`` writes the mapping itself, whole.
        return repr(_shown(self._data))

    __str__ = __repr__


class _Formatter(SandboxedFormatter):
    """``str.format``'s fields, each read as :func:`_shown` reads it once its lookups
    (``{0[total]}``, ``{line.price}``) are done: only what is written is converted."""

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        return super().convert_field(_shown(value), conversion)

    def format_field(self, value: Any, format_spec: str) -> Any:
        return super().format_field(_shown(value), format_spec)


class _EscapeFormatter(_Formatter, SandboxedEscapeFormatter):
    """:class:`_Formatter` for a Markup string's ``format`` (``("{}" | safe).format(x)``),
    escaping what it writes as Jinja's does."""


def _call(name: str, args: list[Any], lineno: int) -> nodes.Call:
    return nodes.Call(nodes.Name(name, "load", lineno=lineno), args, [], None, None, lineno=lineno)


class _Budgeted(NodeTransformer):
    """Routes every loop's items, every ``~`` and every comparison through the budget."""

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.iter = _call(_ITER, [node.iter], node.lineno)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        return _call(_CONCAT, list(node.nodes), node.lineno)

    def visit_Compare(self, node: nodes.Compare) -> nodes.Node:
        self.generic_visit(node)
        node.expr = _call(_CHARGE, [node.expr], node.lineno)
        for operand in node.ops:
            operand.expr = _call(_CHARGE, [operand.expr], node.lineno)
        return node


class BudgetedSandbox(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox, with every unit of work counted (see the module)."""

    intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})
    intercepted_unops = frozenset({"+", "-"})

    def __init__(self) -> None:
        super().__init__(undefined=StrictUndefined, autoescape=False, finalize=_visible)
        self.filters["tojson"] = tojson
        self.filters.update(_EXACT_FILTERS)
        self.tests["divisibleby"] = _divisibleby
        for name in ("random", "urlize", "pprint"):  # not deterministic; slow on long text
            self.filters.pop(name, None)
        self.filters = {name: _budgeted(name, f) for name, f in self.filters.items()}
        self.tests = {name: _budgeted(name, t, test=True) for name, t in self.tests.items()}
        for name in ("namespace", "lipsum"):
            self.globals.pop(name, None)
        self.globals["range"] = _range
        self.globals[_ITER] = _iterate
        self.globals[_CONCAT] = _concat
        self.globals[_CHARGE] = _charge

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        tree = super()._parse(source, name, filename)
        budgeted: nodes.Template = _Budgeted().visit(tree)
        return budgeted

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        if not super().is_safe_attribute(obj, attr, value):
            return False
        if isinstance(obj, _DATA_TYPES) and callable(value):
            allowed = next((m for t, m in _SAFE_METHODS.items() if isinstance(obj, t)), None)
            return allowed is not None and attr in allowed
        return True

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        _spend(1 + _cost(getattr(__obj, "__self__", None)))
        result = super().call(__context, __obj, *args, **kwargs)
        _spend(_cost(result))
        return result

    def getattr(self, obj: Any, attribute: str) -> Any:
        _spend()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        _spend()
        return super().getitem(obj, argument)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        _spend()
        # Arguments of schema-typed tools hold their non-integral numbers as the exact
        # ``Decimal`` the model wrote, which Python refuses to mix with a template's float
        # literal (``{{ amount * 1.2 }}``): the float is read as the decimal it is written as,
        # so the arithmetic stays exact (19.99 * 1.2 is 23.988).
        left, right = _exact_operands(left, right)
        operation = _OPERATORS.get(operator) or self.binop_table[operator]
        return _check_size(operation(left, right))

    def call_unop(self, context: Any, operator: str, arg: Any) -> Any:
        _spend()
        return self.unop_table[operator](arg)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        spec = value.__self__
        # ``"{}".format(amount)`` writes the decimal as ``{{ }}`` does (see _Formatter); a
        # Markup string's (``"{}" | safe``) escapes what it writes, as Jinja's does.
        formatter = (
            _EscapeFormatter(self, escape=spec.escape)
            if isinstance(spec, Markup)
            else _Formatter(self)
        )
        mapped = value.__name__ == "format_map"

        def checked(*args: Any, **kwargs: Any) -> str:
            arguments = args[0].values() if args and isinstance(args[0], Mapping) else args
            _check_format(spec, [*arguments, *kwargs.values()])
            if mapped and (kwargs or len(args) != 1):
                return wrapped(*args, **kwargs)  # Jinja's own TypeError for the misuse
            fields: Mapping[str, Any] = args[0] if mapped else kwargs
            text: str = type(spec)(formatter.vformat(spec, () if mapped else args, fields))
            return text

        return checked


_ENV = BudgetedSandbox()


@functools.lru_cache(maxsize=256)
def _template(source: str) -> Template:
    return _ENV.from_string(source)


def check_template(source: str) -> None:
    """Parse (and compile) a template: the template's syntax error, or
    :class:`TemplateLimitError` when its source is longer than the stated limit."""
    if len(source) > MAX_TEMPLATE_CHARS:
        raise TemplateLimitError(
            f"the template is {len(source)} characters long; templates are limited to "
            f"{MAX_TEMPLATE_CHARS}"
        )
    _template(source)


def render_template(source: str, context: Mapping[str, Any]) -> str:
    """Render within the budget; whatever the template raises propagates (the caller names
    the tool), :class:`TemplateLimitError` included."""
    check_template(source)
    token = _BUDGET.set(_Budget())
    try:
        out: list[str] = []
        size = 0
        variables = {name: value for name, value in context.items() if name not in _INTERNAL}
        for chunk in _template(source).generate(variables):
            size += len(chunk)
            if size > MAX_TEMPLATE_OUTPUT_CHARS:
                raise _too_big(size, "rendering")
            out.append(chunk)
        return "".join(out)
    finally:
        _BUDGET.reset(token)
