"""Naming rules for design identifiers.

Service, agent, toolset, registry and local tool names become Python package, module and method
names and parts of the fixed tool IDs (``toolset.tool``), so they must be lower snake_case
identifiers without a double underscore or a trailing underscore (``a__b`` and ``a_`` would
camel-case like ``a_b`` and ``a`` in generated class names). Tools of external MCP servers keep
the server's names, which may use dashes and capitals; their Python identifiers are derived (and
collisions rejected). Server names beyond that (dots, a leading digit) are given with
``MCPName`` beside a design name. Names are ASCII: provider tool names allow only
``[A-Za-z0-9_-]``, and a non-ASCII identifier would reach models as ``_``s; a non-ASCII name is
answered with its transliteration as the suggestion instead.
"""

from __future__ import annotations

import difflib
import json
import keyword
import re
from collections.abc import Iterable

from anyascii import anyascii

IDENTIFIER = re.compile(r"^[a-z][a-z0-9_]*$")
MCP_TOOL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
MAX_NAME_LENGTH = 64
#: A tool name as MCP servers may spell it (the MCP spec's rule, which the SDK enforces):
#: what ``MCPName`` accepts.
MCP_SERVER_TOOL_NAME = re.compile(r"^[A-Za-z0-9._-]{1,128}$")


def q(value: str) -> str:
    """Quote a name for a message (double quotes, escapes visible)."""
    return json.dumps(value, ensure_ascii=False)


def shown_int(value: int) -> str:
    """An integer a design passed, as an error shows it: its digits, or its size when Python
    will not write them (over ``sys.get_int_max_str_digits()`` digits, ``str`` raises
    ValueError: ``Retry(10**5000)`` failed as a bug in agentgen instead of being refused)."""
    try:
        return str(value)
    except ValueError:
        return f"an integer of {value.bit_length()} bits"


def lone_surrogate(text: str) -> str | None:
    """Describes the first lone surrogate of ``text`` (half of a UTF-16 pair, as a wrongly
    decoded file or an escape like ``"\\ud800"`` leaves), or None. No UTF-8 file, JSON
    document or provider request can carry one, so designs may not contain them."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:  # only surrogates fail to encode
        return (
            f"a lone surrogate (U+{ord(text[exc.start]):04X} at index {exc.start}), which no "
            "UTF-8 file, JSON document or provider request can carry"
        )
    return None


def closest(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate closest to a misspelt ``name`` (case counts for little), if one is close."""
    known = list(dict.fromkeys(candidates))
    folded = {candidate.lower(): candidate for candidate in reversed(known)}
    close = difflib.get_close_matches(name.lower(), list(folded), n=1)
    return folded[close[0]] if close else None


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """``; did you mean "x"?`` for the candidate :func:`closest` to a misspelt ``name``, or an
    empty string when none is close."""
    close = closest(name, candidates)
    return f"; did you mean {q(close)}?" if close is not None else ""


def sanitize(value: str) -> str:
    """A lower snake_case suggestion for a name that is not one; other scripts and accents are
    transliterated to ASCII (``größe`` → ``grosse``, ``東京`` → ``dong_jing``)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", anyascii(value))
    snake = re.sub(r"[^a-z0-9]+", "_", spaced.lower()).strip("_")
    snake = re.sub(r"_+", "_", snake)
    if snake and snake[0].isdigit():
        snake = f"n{snake}"
    return snake


def suggest_name(kind: str, value: str) -> str:
    """A valid ``kind`` name close to ``value`` (:func:`sanitize`, then made usable: a keyword
    gets the kind after it, ``class`` → ``class_tool``, and it is cut to the length limit), or
    an empty string when nothing of ``value`` is left."""
    snake = sanitize(value)
    if keyword.iskeyword(snake):
        snake = f"{snake}_{sanitize(kind) or 'name'}"
    return snake[:MAX_NAME_LENGTH].rstrip("_")


def variable_name(name: str) -> str:
    """The variable a design usually assigns an expression to (``Records`` for "records"),
    for messages that show how to pass a value rather than its name."""
    return "".join(part.capitalize() for part in name.split("_"))


def python_identifier(name: str) -> str:
    """The Python identifier used for a tool name in generated code."""
    return name.replace("-", "_").lower()


def mcp_server_name_problem(value: object) -> str | None:
    """Why ``value`` cannot be a tool name on an MCP server, or None when it can."""
    if not isinstance(value, str):
        return f"MCPName takes the server's tool name as a string, got {type(value).__name__}"
    if not MCP_SERVER_TOOL_NAME.match(value):
        return (
            f"MCPName {q(value)} is not an MCP tool name: 1 to 128 ASCII letters, digits, "
            "'_', '-' and '.'"
        )
    return None


def name_problem(kind: str, value: object, *, mcp_tool: bool = False) -> str | None:
    """Why ``value`` is not a valid ``kind`` name, or None when it is."""
    if not isinstance(value, str):
        return f"{kind} name must be a string, got {type(value).__name__}"
    if not value:
        return f"{kind} name cannot be empty"
    if len(value) > MAX_NAME_LENGTH:
        mapped = (
            "; name the tool within the limit and call the server's tool by its own name "
            f"with MCPName({q(value)}) in its body"
            if mcp_tool and MCP_SERVER_TOOL_NAME.match(value)
            else ""
        )
        return (
            f"{kind} name {q(value)} is longer than {MAX_NAME_LENGTH} characters "
            f"({len(value)}); shorten it{mapped}"
        )
    pattern = MCP_TOOL_NAME if mcp_tool else IDENTIFIER
    if not pattern.match(value):
        suggestion = suggest_name(kind, value)
        if mcp_tool:
            rule = "letters, digits, '_' and '-', starting with a letter"
        elif value.isascii():
            rule = "a lower snake_case identifier (a-z, 0-9, _; starting with a letter)"
        else:
            rule = (
                "a lower snake_case ASCII identifier (a-z, 0-9, _; starting with a letter: "
                "names become Python packages, tool IDs and provider tool names)"
            )
        hint = f"; try {q(suggestion)}" if suggestion and suggestion != value else ""
        if mcp_tool and hint and MCP_SERVER_TOOL_NAME.match(value):
            hint = (
                f"; try {q(suggestion)} with MCPName({q(value)}) in its body, which calls the "
                "server's tool by its own name"
            )
        return f"{kind} name {q(value)} must be {rule}{hint}"
    if not mcp_tool and ("__" in value or value.endswith("_")):
        suggestion = suggest_name(kind, value)
        hint = f"; try {q(suggestion)}" if suggestion and suggestion != value else ""
        return (
            f"{kind} name {q(value)} must not contain a double underscore or end with an "
            f"underscore (generated class names would collide){hint}"
        )
    if keyword.iskeyword(python_identifier(value)):
        return (
            f"{kind} name {q(value)} is a Python keyword; generated code cannot use it; rename "
            f"it, for example {q(python_identifier(value) + '_' + kind)}"
        )
    return None
