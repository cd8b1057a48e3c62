"""Pydantic validation errors as the one-line text agentgen's errors carry."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from agentgen.runtime.contracts.validation_errors import error_line, error_summary, first_error


class Tool(BaseModel):
    name: str
    size: int


class Toolset(BaseModel):
    tools: list[Tool]


def refusal(model: type[BaseModel], value: object) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(value)
    return caught.value


def test_an_error_reads_where_then_what() -> None:
    exc = refusal(Toolset, {"tools": [{"name": "a", "size": 1}, {"name": "b", "size": "big"}]})
    assert first_error(exc) == (
        "tools.1.size: Input should be a valid integer, unable to parse string as an integer"
    )
    # A caller that names the tool itself leaves out the path to it.
    assert error_line(exc.errors()[0], skip=2).startswith("size: Input should be a valid integer")


def test_an_error_at_the_value_itself_is_what_alone() -> None:
    with pytest.raises(ValidationError) as caught:
        TypeAdapter(int).validate_python("x")
    assert first_error(caught.value).startswith("Input should be a valid integer")
    assert error_summary(caught.value).startswith("(value): Input should be a valid integer")


def test_a_summary_keeps_a_few_errors_and_counts_the_rest() -> None:
    exc = refusal(Toolset, {"tools": [{"name": i, "size": "x"} for i in range(4)]})
    assert len(exc.errors()) == 8
    summary = error_summary(exc, most=3)
    assert summary.count("; ") == 3 and summary.endswith("; and 5 more")
    assert summary.startswith("tools.0.name: Input should be a valid string; tools.0.size:")
    assert not error_summary(exc, most=8).endswith("more")
