"""A DSL function called with arguments its signature does not take is a design error at the
call, saying how to call it, not a traceback of the design's code."""

from __future__ import annotations

import pytest

from agentgen.codegen.diagnostics import excerpt
from agentgen.codegen.loader import UserCodeError
from agentgen.codegen.pipeline import check_file
from tests.conftest import DesignRunner


def test_a_call_python_refuses_is_a_design_error_with_how_to_call_it(
    designs: DesignRunner,
) -> None:
    # FromRegistry(Company), a forgotten toolset name, stopped the design with a TypeError
    # traceback: no caret, nothing on how FromRegistry is called, and the error the design's
    # first line made (a service name) was not reported with it.
    errors = designs.errors(
        """
Service("Support")
Company = Registry("company", lambda: URL("https://registry.example"))
Records = Toolset(FromRegistry(Company))
Toolset("never_run")
"""
    )
    assert [e.loc.line for e in errors] == [3, 5]
    assert 'service name "Support"' in errors[0].message
    assert errors[1].message == (
        "FromRegistry() missing 1 required positional argument: 'toolset'; call it as "
        "FromRegistry(registry, toolset). The design stopped at this call: fix it to have the "
        "rest of the design checked"
    )
    assert excerpt(errors[1])[1].strip() == "^" * len("FromRegistry(Company)")
    # Nothing after the call ran: no whole-tree rule reports what it would have declared.


def test_an_unexpected_keyword_is_careted(designs: DesignRunner) -> None:
    (error,) = designs.errors(
        """
with Registry("company"):
    URL("https://registry.example")
    Retry(3, backoff=1)
"""
    )
    assert error.message.startswith(
        "Retry() got an unexpected keyword argument 'backoff'; call it as "
        "Retry(max_retries, backoff_base=0.1, backoff_max=5.0)."
    )
    assert excerpt(error)[1].strip() == "^" * len("backoff=1")


@pytest.mark.parametrize(
    ("call", "form"),
    [
        ('Agent("a")', "call it as Agent(name, description, body)"),
        ('Tool("x", description="X.")', "call it as Tool(name, description, body), or Tool(name)"),
        ('ServerData("row")', "call it as ServerData(kind, schema, description=None, audience="),
    ],
)
def test_each_dsl_function_says_how_it_is_called(
    designs: DesignRunner, call: str, form: str
) -> None:
    (error,) = designs.errors(f"{call}\n")
    assert form in error.message


def test_a_function_of_the_design_named_like_the_dsl_raises_as_its_own(
    designs: DesignRunner,
) -> None:
    # Only the DSL's own functions are answered with their signature: the design's Tool is its
    # code, whose exception is shown as such.
    path = designs.write(
        """
def Tool(name):
    return name

Tool("a", "b")
"""
    )
    with pytest.raises(UserCodeError) as raised:
        check_file(path)
    assert "TypeError: Tool() takes 1 positional argument but 2 were given" in str(raised.value)
