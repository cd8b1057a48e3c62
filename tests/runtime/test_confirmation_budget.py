"""SPEC L5: every confirmation render is bounded work, enforced inside the render.

Templates come from registry providers and run on the event loop every run shares, where
nothing can interrupt a render; each one gets a stated budget of operations and output, and a
template that goes past it fails with ``ConfirmationBudgetError`` (the call does not run).
"""

from __future__ import annotations

import tracemalloc
from decimal import Decimal
from typing import Any

import pytest

from agentgen.runtime.contracts import limits, templates
from agentgen.runtime.contracts.codecs import SchemaCodec
from agentgen.runtime.runs.confirmation import ConfirmationBudgetError, ConfirmationError, render

TOOL = "billing.refund"


def over_budget(template: str, arguments: dict[str, Any] | None = None) -> str:
    """The budget error of rendering ``template`` (the sizes below stay affordable even for a
    render without a budget, so that these tests fail rather than exhaust the machine)."""
    tracemalloc.start()
    try:
        with pytest.raises(ConfirmationBudgetError) as info:
            render(template, arguments or {}, tool_id=TOOL, which="confirmation prompt")
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    message = str(info.value)
    assert message.startswith(f"tool {TOOL!r} confirmation prompt: "), message
    assert "did not run" in message
    # Stopped inside the render, before building what the template asked for.
    assert peak < 4 << 20, peak
    return message


def test_nested_loops_stop_at_the_operation_budget() -> None:
    message = over_budget(
        "{% for i in range(3000) %}{% for j in range(3000) %}{{ j }}{% endfor %}{% endfor %}"
    )
    assert f"{limits.MAX_TEMPLATE_OPERATIONS} operations" in message


def test_a_loop_over_a_models_list_counts_every_item() -> None:
    items = list(range(3_000))
    message = over_budget(
        "{% for a in args['items'] %}{% for b in args['items'] %}.{% endfor %}{% endfor %}",
        {"items": items},
    )
    assert "operations" in message


def test_recursion_through_macros_stops_at_the_budget() -> None:
    over_budget(
        "{% macro m(n) %}{% if n %}{{ m(n - 1) }}{{ m(n - 1) }}{% endif %}{% endmacro %}{{ m(20) }}"
    )


@pytest.mark.parametrize(
    "template",
    [
        "{{ 'x' * 1000000 }}",
        "{{ ['x'] * 1000000 }}",
        "{{ 'a' | center(1000000) }}",
        "{{ 'a' | indent(1000000) }}",
        "{{ 'aaaa' | replace('a', args.long) }}",
        "{{ '%1000000d' % 1 }}",
        "{{ '%8000000d' is divisibleby 1 }}",
        "{{ '{:>1000000}'.format(1) }}",
        "{{ '%d' | format(1) ~ ('x' * 60000) ~ ('x' * 60000) }}",
        "{% set x = args.long %}{% set x = x ~ x %}{% set x = x ~ x %}{{ x | length }}",
        "{{ (args.long ~ args.long) | length }}",
        "{{ 7 ** 1000000 }}",
    ],
    ids=[
        "string-repeat",
        "list-repeat",
        "center-width",
        "indent-width",
        "replace-growth",
        "percent-width",
        "divisibleby-percent-width",
        "format-width",
        "concatenation",
        "doubling",
        "concat-of-arguments",
        "huge-power",
    ],
)
def test_values_beyond_the_output_limit_are_never_built(template: str) -> None:
    message = over_budget(template, {"long": "y" * 40_000})
    assert str(limits.MAX_TEMPLATE_OUTPUT_CHARS) in message or "bits" in message


@pytest.mark.parametrize(
    "template",
    [
        "{{ (10 ** 300) | round(-100000) }}",
        "{{ 1.5 | round(100000, 'floor') }}",
        "{{ args.amount | round(precision=-100000, method='ceil') }}",
    ],
    ids=["integer", "floor", "keywords"],
)
def test_rounding_to_a_huge_number_of_digits_is_refused_before_it_runs(template: str) -> None:
    # Rounding to n digits costs time and memory growing with n: round(-10**9) never ended.
    message = over_budget(template, {"amount": 10**300})
    assert f"the limit is {templates.MAX_ROUND_DIGITS}" in message


def test_rounding_within_the_limit_still_works() -> None:
    rendered = render(
        "{{ 1234.5678 | round(2) }} {{ 1234.5 | round(-2, 'floor') }} {{ n | round(-3) }}",
        {"n": 123_456},
        tool_id=TOOL,
        which="confirmation prompt",
    )
    assert rendered == "1234.57 1200.0 123000"


def test_arguments_named_like_the_sandboxs_internals_do_not_replace_them() -> None:
    # Argument names come from the model (open schemas take any key): one named like the
    # budget's loop wrapper once broke every loop of the template.
    arguments = {"__agentgen_iter__": "x", "__agentgen_concat__": 1, "items": [1, 2]}
    rendered = render(
        "{% for i in items %}{{ i ~ ',' }}{% endfor %}{{ args['__agentgen_iter__'] }}",
        arguments,
        tool_id=TOOL,
        which="confirmation prompt",
    )
    assert rendered == "1,2,x"


def test_arguments_cannot_carry_escape_sequences_or_bidi_overrides_into_a_prompt() -> None:
    # A person reads the prompt, often in a terminal: a model's argument must not rewrite it
    # (ESC sequences) or disguise a name (a bidi override shows "fdp.exe" as "exe.pdf").
    arguments = {"file": "report\u202efdp.exe", "note": "line one\nline two\t(tab)\x1b[1A\x1b[2K"}
    rendered = render(
        "Send {{ file }}?\n{{ note }}\n{{ args | tojson }}",
        arguments,
        tool_id=TOOL,
        which="confirmation prompt",
    )
    assert rendered.splitlines() == [
        "Send report\\u202efdp.exe?",
        "line one",
        "line two\t(tab)\\x1b[1A\\x1b[2K",
        '{"file": "report\\u202efdp.exe", '
        '"note": "line one\\nline two\\t(tab)\\u001b[1A\\u001b[2K"}',
    ]
    assert all(char.isprintable() or char in "\n\t" for char in rendered)
    # Text of other scripts, and spaces of every kind, are shown as written.
    assert render("{{ x }}", {"x": "100\u00a0€ für Zoë"}, tool_id=TOOL, which="p") == (
        "100\u00a0€ für Zoë"
    )


def test_the_output_has_a_stated_limit() -> None:
    message = over_budget("{{ doc }}{{ doc }}", {"doc": "z" * 40_000})
    assert str(limits.MAX_TEMPLATE_OUTPUT_CHARS) in message


def test_scanning_long_text_repeatedly_costs_its_size() -> None:
    over_budget(
        "{% for i in range(200) %}{{ doc | wordcount }}{% endfor %}", {"doc": "word " * 40_000}
    )


@pytest.mark.parametrize(
    "template",
    ["{{ 'a'.ljust(100) }}", "{{ 'a'.zfill(100) }}", "{{ args.update({'x': 1}) }}"],
)
def test_methods_outside_the_allowlist_are_refused(template: str) -> None:
    with pytest.raises(ConfirmationError, match="unsafe"):
        render(template, {"x": 1}, tool_id=TOOL, which="confirmation prompt")


@pytest.mark.parametrize("template", ["{{ namespace() }}", "{{ lipsum(1000) }}"])
def test_globals_that_build_unbounded_state_are_gone(template: str) -> None:
    with pytest.raises(ConfirmationError, match="undefined"):
        render(template, {}, tool_id=TOOL, which="confirmation prompt")


def test_ordinary_templates_fit_the_budget_with_room_to_spare() -> None:
    lines = [{"sku": f"s{i}", "qty": i, "price": "1.50"} for i in range(200)]
    template = (
        "Refund {{ '%.2f' | format(amount) }} on {{ charge_id | upper }} "
        "({{ args.get('note', 'no note') }}):\n"
        "{% for line in lines %}{{ loop.index }}. {{ line.sku }} x{{ line.qty }} "
        "at {{ line.price }}{% if not loop.last %}, {% endif %}{% endfor %}\n"
        "{{ lines | length }} lines, {{ lines | map(attribute='qty') | sum }} items"
    )
    text = render(
        template,
        {"amount": 12.5, "charge_id": "ch_1", "lines": lines},
        tool_id=TOOL,
        which="confirmation prompt",
    )
    assert text.startswith("Refund 12.50 on CH_1 (no note):\n1. s0 x0 at 1.50, 2. s1 x1")
    assert text.endswith("200 lines, 19900 items")


@pytest.mark.parametrize(
    ("template", "shown"),
    [
        ("{{ amount * 1.2 }}", "23.988"),  # exact: the float literal read as written
        ("{{ 1.5 + amount }}", "21.49"),
        ("{{ (amount * 1.2) | round(2) }}", "23.99"),
        ("{{ amount > 10.5 }}", "True"),
        ("{{ '%.2f' | format(amount / 3.0) }}", "6.66"),
    ],
)
def test_exact_number_arguments_mix_with_float_literals(template: str, shown: str) -> None:
    """A registry tool's non-integral numbers arrive as the exact decimals the model wrote;
    Python refuses ``Decimal * float``, which failed every such prompt."""
    codec = SchemaCodec({"type": "object", "properties": {"amount": {"type": "number"}}}, TOOL)
    arguments = codec.decode_arguments('{"amount": 19.99}')
    assert render(template, arguments, tool_id=TOOL, which="confirmation prompt") == shown


@pytest.mark.parametrize(
    ("template", "fragment"),
    [
        (
            "{{ amount ** 100000000.0 }}",
            "decimal arithmetic on a number argument failed (Overflow)",
        ),
        ("{{ amount / 0.0 }}", "(DivisionByZero)"),
        ("{{ 1 / 0 }}", "ZeroDivisionError: division by zero"),
        ("{{ note }}", "'note' is undefined; optional arguments are read as {{ args.get("),
    ],
)
def test_a_failed_render_says_what_failed_with_the_advice_that_fits(
    template: str, fragment: str
) -> None:
    with pytest.raises(ConfirmationError) as failure:
        render(template, {"amount": Decimal("19.99")}, tool_id=TOOL, which="confirmation prompt")
    message = str(failure.value)
    assert fragment in message, message
    assert ("args.get" in message) == (template == "{{ note }}")


@pytest.mark.parametrize(
    ("template", "shown"),
    [
        ("{{ amount == 0.1 }} {{ 0.1 == amount }} {{ amount != 0.1 }}", "True True False"),
        ("{{ amount < 0.1 }} {{ amount <= 0.1 }} {{ amount >= 0.1 }}", "False True True"),
        ("{{ limit <= 19.99 }} {{ limit > 19.98 }}", "True True"),
        (
            "{{ amount in [0.1, 0.2] }} {{ amount is eq 0.1 }} {{ amount is lt 0.1 }}",
            "True True False",
        ),
        ('{{ lines | selectattr("price", "le", 9.6) | list | length }}', "2"),
        ("{{ 0.5 < 1.5 }} {{ 2 == 2.0 }} {{ 'a' in 'abc' }}", "True True True"),  # as before
    ],
)
def test_exact_number_arguments_compare_with_float_literals_as_written(
    template: str, shown: str
) -> None:
    """Python compares a ``Decimal`` with a float's binary value: an amount of 0.1 was not
    ``== 0.1`` and was ``< 0.1``, so a prompt's warnings misfired at their thresholds."""
    codec = SchemaCodec(
        {
            "type": "object",
            "properties": {
                "amount": {"type": "number"},
                "limit": {"type": "number"},
                "lines": {"type": "array"},
            },
        },
        TOOL,
    )
    arguments = codec.decode_arguments(
        '{"amount": 0.1, "limit": 19.99, "lines": [{"price": 9.5}, {"price": 9.6}]}'
    )
    assert render(template, arguments, tool_id=TOOL, which="confirmation prompt") == shown


@pytest.mark.parametrize(
    ("template", "shown"),
    [
        # The float 0.1 is 0.1000000000000000055...: max picked it over an amount of 0.1, and
        # min the amount over a 0.1 written first.
        ("{{ [amount, 0.1] | max is sameas amount }}", "True"),
        ("{{ [0.1, amount] | min is sameas amount }}", "False"),
        # The float 0.3 is 0.2999999999999999888..., below a total of 0.29999999999999999.
        ("{{ [0.3, total] | sort | first is sameas total }}", "True"),
        ("{{ [total, 0.3] | sort(reverse=true) | first is sameas total }}", "False"),
        (
            "{{ (lines + [{'sku': 'z', 'price': 9.6}]) | sort(attribute='price')"
            " | join(',', attribute='sku') }}",
            "c,a,z,b",
        ),
        ("{{ (([{'sku': 'z', 'price': 0.1}] + lines) | min(attribute='price')).sku }}", "z"),
        ("{{ [amount, 0.1, 0.2] | unique | list | length }}", "2"),
        ("{{ {'x': 0.1, 'y': amount} | dictsort(by='value') | map('first') | join }}", "xy"),
        ("{{ (lines + [{'sku': 'z', 'price': 9.6}]) | groupby('price') | length }}", "3"),
        (
            "{{ (lines + [{'sku': 'z', 'price': 9.6}]) | groupby('price')"
            " | map(attribute='grouper') | join(' ') }}",
            "0.1 9.6 9.7",
        ),
        ("{{ [amount, 0.2] | sum }} {{ lines | sum(attribute='price') }}", "0.3 19.4"),
        ("{{ total is divisibleby 0.1 }} {{ amount is divisibleby 0.03 }}", "False False"),
        ("{{ lines[0].price is divisibleby 0.2 }} {{ 9 is divisibleby 1.5 }}", "True True"),
        # As before: floats alone, integers, and sum's refusal of strings.
        (
            "{{ [0.1, 0.2] | sum }} {{ [1, 2] | sum(start=1) }} {{ [0.5, 0.25] | max }}",
            "0.30000000000000004 4 0.5",
        ),
        (
            "{{ ['b', 'A', 'a'] | sort | join }}"
            " {{ ['b', 'A'] | sort(case_sensitive=true) | join }}",
            "Aab Ab",
        ),
    ],
)
def test_ordering_filters_compare_exact_numbers_with_floats_as_written(
    template: str, shown: str
) -> None:
    """``min``, ``max``, ``sort``, ``unique``, ``dictsort`` and ``groupby`` compared an exact
    number argument with a float by the float's binary value, and ``sum`` raised ``TypeError``
    on the mix; they now read floats as comparisons and ``+`` do, and return the template's
    own values."""
    codec = SchemaCodec(
        {
            "type": "object",
            "properties": {
                "amount": {"type": "number"},
                "total": {"type": "number"},
                "lines": {"type": "array"},
            },
        },
        TOOL,
    )
    arguments = codec.decode_arguments(
        '{"amount": 0.1, "total": 0.29999999999999999, "lines": [{"sku": "a", "price": 9.6}, '
        '{"sku": "b", "price": 9.7}, {"sku": "c", "price": 0.1}]}'
    )
    assert render(template, arguments, tool_id=TOOL, which="confirmation prompt") == shown


@pytest.mark.parametrize(
    ("template", "shown"),
    [
        # A map/select/reject/reverse/unique result is an iterator, not a list: its float items
        # were compared by their binary value (0.1000000000000000055...), where the same items
        # as a list (``| list``) were read as written.
        ("{{ amount in [{'p': 0.1}, {'p': 0.2}] | map(attribute='p') }}", "True"),
        ("{{ amount is in ([{'p': 0.2}, {'p': 0.1}] | map(attribute='p')) }}", "True"),
        ("{{ amount in [0.2, 0.1] | reverse }}", "True"),
        ("{{ amount in [0.0, 0.1] | select }}", "True"),
        ("{{ amount in [0.1, 0.1] | unique }}", "True"),
        ("{{ amount not in [0.1, 0.3] | reject('eq', 0.3) }}", "False"),
        # A dict's float keys, as ``in`` reads a dict.
        ("{{ amount in {0.1: 'low', 0.2: 'high'} }}", "True"),
        # A float literal was read as written on the left only: 0.1 was not in [0.1] | reverse.
        ("{{ amount in [0.2, 0.3] | reverse }} {{ 0.1 in [0.1] | reverse }}", "False True"),
        # As before: floats that differ as written.
        ("{{ 0.3 in [0.1 + 0.2] | reverse }}", "False"),
    ],
)
def test_in_over_an_iterator_compares_exact_numbers_with_floats_as_written(
    template: str, shown: str
) -> None:
    """``in`` over a filter's iterator (``values | map(...)``) compared an exact number
    argument with each float item by its binary value, unlike ``in`` over a list."""
    codec = SchemaCodec(
        {"type": "object", "properties": {"amount": {"type": "number"}}},
        TOOL,
    )
    arguments = codec.decode_arguments('{"amount": 0.1}')
    assert render(template, arguments, tool_id=TOOL, which="confirmation prompt") == shown


@pytest.mark.parametrize(
    ("template", "shown"),
    [
        # str() of a Decimal quotient is in exponent form: 100 / 0.5 was "2E+2" units.
        ("{{ 100 / price }} units", "200 units"),
        ("{{ 1 / amount }}", "10"),
        ("{{ 'each ' ~ 100 / price }}", "each 200"),
        # A list or dict showed Python's repr of each decimal.
        ("{{ lines }}", "[{'sku': 'a', 'price': 9.5}, {'sku': 'b', 'price': 0.10}]"),
        ("{{ [amount, price] }} {{ (amount, 2) }}", "[0.1, 0.5] (0.1, 2)"),
        ("{{ 'lines: ' ~ lines[1] }}", "lines: {'sku': 'b', 'price': 0.10}"),
        # As written, trailing zeros and all; exponents beyond twenty digits stay exponents.
        ("{{ lines[1].price }} {{ tiny }} {{ huge }}", "0.10 0.0000001 1E+40"),
        # groupby's groups are tuples of their own type: they wrote Decimal('9.5').
        ("{{ lines | groupby('price') | first }}", "(0.10, [{'sku': 'b', 'price': 0.10}])"),
        # Floats and other values as before.
        ("{{ [0.5, 1e40, none, true, 'x'] }}", "[0.5, 1e+40, None, True, 'x']"),
    ],
)
def test_exact_numbers_are_written_as_numbers(template: str, shown: str) -> None:
    """A prompt wrote an exact decimal argument's quotient in exponent form and a list of
    them as ``[Decimal('9.5')]``; floats wrote ``200.0`` and ``[9.5]``."""
    codec = SchemaCodec(
        {
            "type": "object",
            "properties": {
                "amount": {"type": "number"},
                "price": {"type": "number"},
                "tiny": {"type": "number"},
                "huge": {"type": "number"},
                "lines": {"type": "array"},
            },
        },
        TOOL,
    )
    arguments = codec.decode_arguments(
        '{"amount": 0.1, "price": 0.5, "tiny": 1e-7, "huge": 1e40, '
        '"lines": [{"sku": "a", "price": 9.5}, {"sku": "b", "price": 0.10}]}'
    )
    assert render(template, arguments, tool_id=TOOL, which="confirmation prompt") == shown


@pytest.mark.parametrize(
    ("template", "shown"),
    [
        # Each wrote str() of the Decimal quotient, 2.0E+2, where {{ }} and ~ write 200.
        ("{{ (100 / price) | string }} units", "200 units"),
        ("{{ [100 / price, price, 2] | join(', ') }}", "200, 0.5, 2"),
        ("{{ lines | map(attribute='price') | join('/') }}", "9.5/0.10"),
        ("{{ '%s units' % (100 / price) }}", "200 units"),
        ("{{ '%s and %s' % (amount, 100 / price) }}", "0.1 and 200"),
        ("{{ '%(n)s' % {'n': 100 / price} }} {{ '%s' | format(100 / price) }}", "200 200"),
        ("{{ '{} units'.format(100 / price) }} {{ '{n}'.format(n=100 / price) }}", "200 units 200"),
        ("{{ '{:>5}|{:+}'.format(100 / price, 100 / price) }}", "  200|+200"),
        ("{{ '{p}'.format_map({'p': 100 / price}) }}", "200"),
        ("{{ ('<{}>' | safe).format(100 / price) }}", "<200>"),
        # They wrote Python's repr of a list's decimals: [Decimal('9.5'), ...].
        ("{{ lines | map(attribute='price') | list | string }}", "[9.5, 0.10]"),
        ("{{ '%s' % ([price],) }} {{ '{}'.format({'p': price}) }}", "[0.5] {'p': 0.5}"),
        ("{{ (100 / price) | center(7) }}|{{ (100 / price) | upper }}", "  200  |200"),
        # What a spec asks for, as before; exponents beyond twenty digits stay exponents.
        ("{{ '%d %.2f' % (100 / price, price) }} {{ '{:.2f}'.format(price) }}", "200 0.50 0.50"),
        ("{{ huge | string }} {{ '{}'.format(huge) }} {{ '%s' % tiny }}", "1E+40 1E+40 0.0000001"),
        # Floats as before.
        ("{{ 200.0 | string }} {{ '%s' % 0.5 }} {{ [0.5, 2] | join(',') }}", "200.0 0.5 0.5,2"),
    ],
)
def test_exact_numbers_made_text_are_written_as_numbers(template: str, shown: str) -> None:
    """``| string``, ``| join``, ``%`` and ``.format`` wrote an exact decimal argument's
    quotient in exponent form (``2.0E+2``) and a list's decimals as ``Decimal('9.5')``, where
    ``{{ }}`` and ``~`` wrote ``200`` and ``9.5``: a person confirms what is written."""
    codec = SchemaCodec(
        {
            "type": "object",
            "properties": {
                "amount": {"type": "number"},
                "price": {"type": "number"},
                "tiny": {"type": "number"},
                "huge": {"type": "number"},
                "lines": {"type": "array"},
            },
        },
        TOOL,
    )
    arguments = codec.decode_arguments(
        '{"amount": 0.1, "price": 0.5, "tiny": 1e-7, "huge": 1e40, '
        '"lines": [{"sku": "a", "price": 9.5}, {"sku": "b", "price": 0.10}]}'
    )
    assert render(template, arguments, tool_id=TOOL, which="confirmation prompt") == shown


@pytest.mark.parametrize(
    ("template", "shown"),
    [
        # Each raised a bare TypeError or AttributeError (len, += or splitlines of a number).
        ("{{ (100 / price) | truncate(2, true, '', 0) }}", "20"),
        ("{{ huge | truncate(5, true, '', 0) }}", "1E+40"),
        ("{{ 123456 | truncate(3, true, '', 0) }}", "123"),
        ("{{ 12345.5 | truncate(5, true, '~', 0) }}", "1234~"),
        ("{{ amount | indent(2, true) }}|{{ 7 | indent(2, first=true) }}", "  0.1|  7"),
        ("{{ 2.5 | indent('> ', true) }}", "> 2.5"),
        ("{{ 123456 | wordwrap(3) }}|{{ (100 / price) | wordwrap(2) }}", "123\n456|20\n0"),
        ("{{ true | truncate(2, true, '', 0) }}", "Tr"),
    ],
)
def test_text_filters_write_a_number_as_the_template_writes_it(template: str, shown: str) -> None:
    """``| truncate``, ``| indent`` and ``| wordwrap`` took their value for a string: on a
    number (an exact decimal argument, an int, a float) they failed with a bare ``TypeError``
    or ``AttributeError``. They now get the number as ``{{ }}`` writes it."""
    codec = SchemaCodec(
        {
            "type": "object",
            "properties": {
                "amount": {"type": "number"},
                "price": {"type": "number"},
                "huge": {"type": "number"},
            },
        },
        TOOL,
    )
    arguments = codec.decode_arguments('{"amount": 0.1, "price": 0.5, "huge": 1e40}')
    assert render(template, arguments, tool_id=TOOL, which="confirmation prompt") == shown


def test_exact_numbers_are_converted_only_where_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """Writing decimals as numbers converts what is written, not every value of a mapping a
    ``%`` or ``.format`` reads one field of, nor every item ``join`` reads an attribute of:
    a loop over ``"%(id)s" % args`` would copy all the arguments at each of its operations,
    work the operation budget does not count."""
    visits = 0
    written_items = templates._written_items

    def counted(value: Any, depth: int) -> Any:
        nonlocal visits
        visits += 1
        return written_items(value, depth)

    monkeypatch.setattr(templates, "_written_items", counted)
    lines = [{"sku": f"s{i}", "detail": list(range(50))} for i in range(100)]
    arguments = {"id": "r1", "lines": lines, "price": Decimal("0.5")}
    template = (
        "{% for i in range(10) %}{{ '%(id)s' % args }}{{ '{0[id]}'.format(args) }}"
        "{{ '{id}'.format_map(args) }}{{ '%(id)s' | format(**args) }}{% endfor %}"
        "{{ lines | join(',', attribute='sku') | length }} {{ '%(price)s' % args }}"
    )
    rendered = render(template, arguments, tool_id=TOOL, which="confirmation prompt")
    assert rendered == "r1" * 40 + "389 0.5"
    # One visit per value written (40 ids, 100 skus, a price), not 5,000 per copy of lines.
    assert visits < 1000, visits


@pytest.mark.parametrize(
    ("template", "shown"),
    [
        # A tuple with a float item was read as a list: it no longer ordered against other
        # tuples nor hashed, and the ordering filters raised TypeError on tuples Jinja orders.
        ("{{ [(1, 0.5), (1, 2)] | sort }}", "[(1, 0.5), (1, 2)]"),
        ("{{ [(1, 0.5), (1, 0.5)] | unique | list }}", "[(1, 0.5)]"),
        ("{{ [(1, 0.5), (2, 1)] | max }} {{ [(2, 1), (1, amount)] | min }}", "(2, 1) (1, 0.1)"),
        ("{{ {'a': (1, 0.5), 'b': (1, 2)} | dictsort(by='value') | map('first') | join }}", "ab"),
        ("{{ (1, 0.5) < (2, 1) }} {{ (1, amount) == (1, 0.1) }}", "True True"),
        # A dict's keys(), values() and items() are read as what they view: a float in them
        # was compared by its binary value (0.1 was not in d.keys() for a key 0.1).
        ("{{ 0.1 in {0.1: 'low'}.keys() }} {{ amount in {0.1: 'low'}.keys() }}", "True True"),
        ("{{ amount in {'low': 0.1}.values() }} {{ 0.2 in {'low': 0.1}.values() }}", "True False"),
        ("{{ ('low', amount) in {'low': 0.1}.items() }}", "True"),
    ],
)
def test_tuples_and_dict_views_compare_exact_numbers_with_floats_as_written(
    template: str, shown: str
) -> None:
    codec = SchemaCodec({"type": "object", "properties": {"amount": {"type": "number"}}}, TOOL)
    arguments = codec.decode_arguments('{"amount": 0.1}')
    assert render(template, arguments, tool_id=TOOL, which="confirmation prompt") == shown


@pytest.mark.parametrize(
    ("template", "shown"),
    [
        # Jinja's | format and | join keep a Markup string (soft_str), whose % and join escape
        # what they write, as % and .format on it do here; the exact-decimal versions made it a
        # plain str, so the same template wrote the argument's markup raw.
        ("{{ ('<b>%s</b>' | safe) | format(name) }}", "<b>&lt;i&gt;</b>"),
        ("{{ ('<b>%s</b>' | safe) % name }}", "<b>&lt;i&gt;</b>"),
        ("{{ ('<b>{}</b>' | safe).format(name) }}", "<b>&lt;i&gt;</b>"),
        ("{{ [name, 'b'] | join('<br>' | safe) }}", "&lt;i&gt;<br>b"),
        ("{{ [name | safe, 0.5] | join(', ' | safe) }}", "<i>, 0.5"),
        # A plain string escapes nothing, as before.
        ("{{ '<b>%s</b>' | format(name) }} {{ [name] | join('<br>') }}", "<b><i></b> <i>"),
    ],
)
def test_a_markup_format_or_join_escapes_what_it_writes(template: str, shown: str) -> None:
    assert templates.render_template(template, {"name": "<i>"}) == shown
