"""SPEC G10: confirmation templates (sandboxed Jinja2, strict undefined, canonical JSON names)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from agentgen.runtime.contracts.codecs import decode_exact
from agentgen.runtime.contracts.specs import ConfirmationSpec
from agentgen.runtime.runs.confirmation import ConfirmationError, denied_result, prompt, render

TOOL = "billing.refund"


def show(template: str, arguments: dict[str, Any]) -> str:
    return render(template, arguments, tool_id=TOOL, which="confirmation prompt")


def refused(template: str, arguments: dict[str, Any]) -> str:
    with pytest.raises(ConfirmationError) as info:
        show(template, arguments)
    return str(info.value)


def test_arguments_are_read_by_their_json_names() -> None:
    arguments = decode_exact('{"amount":12.50,"charge_id":"ch_1","notify":true}')
    assert show("Refund {{ amount }} on {{ charge_id }}?", arguments) == "Refund 12.50 on ch_1?"
    assert show("{% if notify %}with{% else %}without{% endif %} mail", arguments) == ("with mail")


def test_exact_numbers_are_written_as_given() -> None:
    arguments = decode_exact('{"id":9007199254740993,"amount":0.1,"total":1.10}')
    assert show("{{ id }} {{ amount }} {{ total }}", arguments) == "9007199254740993 0.1 1.10"
    assert show("{{ id | tojson }} {{ amount | tojson }} {{ total | tojson }}", arguments) == (
        "9007199254740993 0.1 1.10"
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (["a", 1, None, True], '["a", 1, null, true]'),
        ({"b": 2, "a": [1, {"c": "d"}]}, '{"a": [1, {"c": "d"}], "b": 2}'),
        ('say "hi"', '"say \\"hi\\""'),
        ("naïve ☃", '"naïve ☃"'),
        ("line\nbreak", '"line\\nbreak"'),
        (None, "null"),
        (False, "false"),
        ({}, "{}"),
        ([], "[]"),
    ],
)
def test_tojson_writes_json_values(value: Any, expected: str) -> None:
    text = show("{{ value | tojson }}", {"value": value})
    assert text == expected
    assert json.loads(text) == value


def test_tojson_keeps_decoded_numbers_numbers() -> None:
    # Arguments reach templates exactly decoded: non-integers are Decimals, not strings.
    arguments = decode_exact('{"lines":[{"price":0.1,"qty":2},{"price":19.99,"qty":1}]}')
    text = show("{{ lines | tojson }}", arguments)
    assert text == '[{"price": 0.1, "qty": 2}, {"price": 19.99, "qty": 1}]'
    assert json.loads(text) == [{"price": 0.1, "qty": 2}, {"price": 19.99, "qty": 1}]


def test_the_whole_argument_object_can_be_written() -> None:
    arguments = {"b": [1, 2], "a": "x"}
    assert json.loads(show("{{ args | tojson }}", arguments)) == arguments


def test_optional_arguments_are_read_through_args() -> None:
    template = 'Refund {{ amount }} ({{ args.get("note", "none") }})'
    assert show(template, {"amount": 5}) == "Refund 5 (none)"
    assert show(template, {"amount": 5, "note": "late"}) == "Refund 5 (late)"
    assert show('{% if "note" in args %}{{ args.note }}{% else %}-{% endif %}', {}) == "-"


def test_a_missing_argument_is_an_error_naming_the_tool() -> None:
    message = refused("Refund {{ amount }} ({{ note }})", {"amount": 5})
    assert TOOL in message
    assert "confirmation prompt" in message
    assert "'note' is undefined" in message
    assert 'args.get("name")' in message


@pytest.mark.parametrize(
    "template",
    [
        "{{ args.note }}",
        '{{ args["note"] }}',
        "{{ amount.cents }}",
        "{{ note | tojson }}",
        "{% for x in note %}{% endfor %}",
        "{{ note ~ 'x' }}",
    ],
)
def test_undefined_is_strict_everywhere(template: str) -> None:
    message = refused(template, {"amount": 5})
    assert TOOL in message


def test_prompt_and_denied_result_name_their_template() -> None:
    spec = ConfirmationSpec("Refund {{ amount }}?", "Refund of {{ amount }} denied.", "Refund")
    assert prompt(spec, {"amount": 5}, TOOL) == "Refund 5?"
    assert denied_result(spec, {"amount": 5}, TOOL) == "Refund of 5 denied."
    broken = ConfirmationSpec("{{ nope }}", "{{ nope }}")
    with pytest.raises(ConfirmationError, match=f"'{TOOL}' confirmation prompt"):
        prompt(broken, {}, TOOL)
    with pytest.raises(ConfirmationError, match=f"'{TOOL}' denied result"):
        denied_result(broken, {}, TOOL)


@pytest.mark.parametrize(
    "template",
    [
        "{{ args.__class__.__mro__ }}",
        "{{ args.__class__ }}",
        "{{ amount.__class__.__subclasses__() }}",
        "{{ args.get.__self__ }}",
        "{{ ''.__class__.__base__.__subclasses__() }}",
        "{{ cycler.__init__.__globals__ }}",
        "{{ lipsum.__globals__['os'] }}",
        "{{ args['__class__'] }}",
        "{{ (args | attr('__class__')) }}",
        "{{ amount.__add__(1) }}",
    ],
)
def test_internals_are_out_of_reach(template: str) -> None:
    message = refused(template, {"amount": 5})
    assert TOOL in message
    assert "<class" not in message


def test_templates_cannot_change_the_arguments() -> None:
    arguments = {"lines": [1, 2], "meta": {"a": 1}}
    before = copy.deepcopy(arguments)
    for template in (
        "{{ lines.append(3) }}",
        "{{ meta.update(b=2) }}",
        "{{ args.clear() }}",
        "{{ args.lines.pop() }}",
        "{{ meta.__setitem__('a', 2) }}",
    ):
        assert TOOL in refused(template, arguments)
    assert arguments == before


@pytest.mark.parametrize(
    "template",
    [
        "{{ range(10 ** 9) | list | length }}",
        "{{ 1 / 0 }}",
        "{{ amount + 'x' }}",
        "{{ amount",
        "{% for %}",
        "{{ args.get() }}",
    ],
)
def test_every_failure_is_a_confirmation_error(template: str) -> None:
    message = refused(template, {"amount": 5})
    assert message.startswith(f"tool '{TOOL}' confirmation prompt: ")


def test_non_identifier_names_are_read_through_args_only() -> None:
    arguments = {"a-b": 1, "2x": 2, "with space": 3, "ok_name": 4}
    assert show('{{ args["a-b"] }} {{ args["2x"] }} {{ args["with space"] }}', arguments) == (
        "1 2 3"
    )
    assert show("{{ ok_name }}", arguments) == "4"
    # "a-b" is an expression (a minus b), not the argument.
    assert TOOL in refused("{{ a-b }}", arguments)


def test_an_argument_named_args_is_still_readable() -> None:
    arguments = {"args": "x", "amount": 1}
    assert show('{{ args["args"] }} {{ args["amount"] }}', arguments) == "x 1"


def test_values_are_not_escaped() -> None:
    assert show("{{ note }}", {"note": "<b>&'\"</b>"}) == "<b>&'\"</b>"


@pytest.mark.parametrize(
    ("template", "arguments", "expected"),
    [
        # Jinja said only "'list' object has no attribute 'items'" / "... 'splitlines'".
        (
            "{{ ids | xmlattr }}",
            {"ids": ["a", "b"]},
            "the filter 'xmlattr' takes a mapping (a JSON object), not a list of 2 items; pass "
            "it an object, or loop over the list's items",
        ),
        (
            "{{ ids | indent(2) }}",
            {"ids": ["a", "b"]},
            "the filter 'indent' takes text (a string or a number), not a list of 2 items "
            "(AttributeError: 'list' object has no attribute 'splitlines'); join the list's "
            "items into text first: | join(', ') | indent",
        ),
        (
            "{{ meta | wordwrap(10) }}",
            {"meta": {"a": 1}},
            "the filter 'wordwrap' takes text (a string or a number), not an object with 1 key "
            "(AttributeError: 'dict' object has no attribute 'splitlines')",
        ),
        # A number made into text for xmlattr said "'str' object has no attribute 'items'".
        (
            "{{ amount | xmlattr }}",
            {"amount": 5},
            "the filter 'xmlattr' takes a mapping (a JSON object), not a number",
        ),
        ("{{ amount | join(', ') }}", {"amount": 5}, "the filter 'join' takes a list"),
        # Filters returning an iterator failed where it was read, under another filter's name.
        (
            "{{ amount | selectattr('x') | list }}",
            {"amount": 5},
            "the filter 'selectattr' takes a list (or a string, or an object's keys), not a number",
        ),
        ("{{ amount | items | list }}", {"amount": 5}, "the filter 'items' takes a mapping"),
        ("{{ amount | reverse }}", {"amount": 5}, "the filter 'reverse' takes a list"),
        (
            "{{ note | round }}",
            {"note": "x"},
            "the filter 'round' takes a number, not a string of 1 character (TypeError: ",
        ),
        (
            "{{ note is divisibleby 3 }}",
            {"note": "x"},
            "the test 'divisibleby' takes a number, not a string of 1 character",
        ),
        # A value of the right kind: the filter's own arguments are at fault.
        (
            "{{ note | truncate('a') }}",
            {"note": "hello"},
            "the filter 'truncate' failed on a string of 5 characters (TypeError: ",
        ),
    ],
)
def test_a_filter_given_a_value_it_cannot_take_names_itself_and_the_value_kind(
    template: str, arguments: dict[str, Any], expected: str
) -> None:
    message = refused(template, arguments)
    assert message.startswith(f"tool '{TOOL}' confirmation prompt: {expected}"), message
    # The kind and size of the value, never the value: it may be private.
    assert "'a', 'b'" not in message and "hello" not in message


def test_a_filter_misuse_with_its_arguments_at_fault_says_to_check_them() -> None:
    message = refused("{{ note | truncate('a') }}", {"note": "hello"})
    assert message.endswith("; check the arguments given to it")
