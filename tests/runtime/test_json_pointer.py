"""Local references are read the same way everywhere: the generator's check, the MCP start-up
comparison and the MCP text reading agree with the runtime's validator on what a ``$ref``
names."""

from __future__ import annotations

from typing import Any

import pytest

from agentgen.codegen.builders.types import schema_problems
from agentgen.runtime.contracts.codecs import PayloadError, SchemaCodec
from agentgen.runtime.json_pointer import resolve_pointer, resolve_reference

SPACED: dict[str, Any] = {
    "type": "object",
    "properties": {"a": {"$ref": "#/$defs/My%20Type"}},
    "$defs": {"My Type": {"type": "string"}},
}


def test_a_percent_encoded_reference_names_the_decoded_key() -> None:
    assert resolve_reference(SPACED, "#/$defs/My%20Type") == {"type": "string"}
    assert resolve_reference({"a/b": 1, "~": 2}, "#/a~1b") == 1
    assert resolve_reference({"a/b": 1, "~": 2}, "#/~0") == 2
    assert resolve_reference(SPACED, "#") is SPACED


def test_the_generator_accepts_what_the_validator_resolves() -> None:
    codec = SchemaCodec(SPACED, "arguments of t")
    with pytest.raises(PayloadError):
        codec.decode({"a": 1})  # the validator followed the reference to "My Type"
    assert schema_problems(SPACED, payload=True) == []


@pytest.mark.parametrize("pointer", ["/01", "/١", "/+1", "/-0", "/ 1", "/2"])
def test_array_indexes_are_rfc_6901_digits(pointer: str) -> None:
    with pytest.raises(LookupError):
        resolve_pointer(["a", "b"], pointer)
    assert resolve_pointer(["a", "b"], "/1") == "b"
    assert resolve_pointer(["a", "b"], "/0") == "a"


@pytest.mark.parametrize("ref", ["other.json#/a", "#/nope", "#/$defs/%FF", "#a"])
def test_references_that_name_nothing_are_lookup_errors(ref: str) -> None:
    with pytest.raises(LookupError):
        resolve_reference(SPACED, ref)
