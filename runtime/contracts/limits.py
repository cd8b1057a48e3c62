"""Limits on everything that reaches a run from outside: registries, models and transcripts.

Registry declarations come from other processes, tool arguments from models, confirmation
templates from providers. Each kind of input has a stated bound so that handling it is bounded
work: input beyond a bound is refused with a typed error naming the tool (or call) and the
limit, never processed slowly, and never allowed to stall the event loop that every concurrent
run shares. The numbers live here, with why each one is what it is, so that code, docs and
tests quote the same values.
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_REGISTRY_TIMEOUT",
    "MAX_ARGUMENTS_BYTES",
    "MAX_ARGUMENT_DEPTH",
    "MAX_DECLARATION_BYTES",
    "MAX_DESCRIPTION_CHARS",
    "MAX_ISSUES",
    "MAX_ISSUES_CHARS",
    "MAX_ISSUE_CHARS",
    "MAX_MCP_TEXT_DEPTH",
    "MAX_PATTERN_CHARS",
    "MAX_SCHEMA_BYTES",
    "MAX_SCHEMA_DEPTH",
    "MAX_SCHEMA_EXPANSION",
    "MAX_TEMPLATE_CHARS",
    "MAX_TEMPLATE_OPERATIONS",
    "MAX_TEMPLATE_OUTPUT_CHARS",
    "MAX_TEXT_CHARS",
    "MAX_TOOL_CALLS",
    "MAX_TRANSCRIPT_DEPTH",
    "MAX_VALIDATION_STEPS",
    "MAX_VALUE_DEPTH",
    "REGEX_MAX_MEMORY",
]

#: Compact JSON size of one JSON Schema of a registry tool (payload, result, server data).
#: A tool's schema is sent to the model with its definition: 256 KiB is about 64k tokens, more
#: than a model can use for one tool; schemas generated from pydantic models are a few KiB.
#: Checking a 1.3 MB schema with jsonschema took 12 s of blocked event loop before this limit.
MAX_SCHEMA_BYTES = 256 * 1024

#: Nesting of JSON objects and arrays inside one JSON Schema. Every level of a value's
#: nesting takes two schema levels (``properties`` → name); 64 allows 32 levels of data, far
#: beyond what tool payloads use, and keeps validation well inside Python's recursion limit.
MAX_SCHEMA_DEPTH = 64

#: Subschemas of one JSON Schema once every ``$ref`` is inlined (a reference back to a schema
#: being inlined counted once). References let a few kilobytes stand for millions of
#: subschemas (40 branches referring to 40 branches referring to 40 more), and validating one
#: value may evaluate every one: 64,000 took 3 s of blocked event loop. 20,000 is more than a
#: written-out schema within :data:`MAX_SCHEMA_BYTES` holds in practice, and far more than
#: generated payload models reach.
MAX_SCHEMA_EXPANSION = 20_000

#: Schema keyword evaluations one validation of a value may do (every ``type``, ``properties``,
#: ``$ref``... applied to a part of the value counts one). Ordinary payloads need a few per
#: value they hold; a 1 MiB payload of 50,000 small objects about 400,000. A recursive schema
#: applying itself twice to one property needs 2**depth, and was the one way left to make one
#: validation run for minutes: past this, the value is refused (a few seconds at most).
MAX_VALIDATION_STEPS = 1_000_000

#: Length of one issue of a value a registry (or MCP) tool's schema refuses: the message the
#: model reads in its tool error. jsonschema's messages show the value at fault in full (a
#: 1 MiB string argument is a 1 MiB message, once per keyword it fails); 2,000 characters
#: say what is wrong and where.
MAX_ISSUE_CHARS = 2000

#: Issues listed for one invalid value (arguments, a result), followed by how many more there
#: were: every wrong item of an array is an issue, and 100,000 of them (300 KB of arguments)
#: made a tool error of 7 MB for the model to read. Twenty show what is wrong and where; the
#: model fixes the pattern, not each item.
MAX_ISSUES = 20

#: Characters of all the issues listed for one invalid value (paths and messages): twenty
#: issues of :data:`MAX_ISSUE_CHARS` each would still be 40,000 characters of tool error.
MAX_ISSUES_CHARS = 16 * 1024

#: Compact JSON size of a whole tool declaration (its schemas and consumer contract).
MAX_DECLARATION_BYTES = 1024 * 1024

#: Length of one ``pattern`` or ``patternProperties`` key. Patterns run on RE2, in time linear
#: in the text; the pattern's own size sets the automaton's size.
MAX_PATTERN_CHARS = 1024

#: Memory RE2 may use for one compiled pattern (its default); a pattern needing more is refused.
REGEX_MAX_MEMORY = 8 << 20

#: Length of a tool title, a tag, a required label or a server-data kind.
MAX_TEXT_CHARS = 256

#: Length of a tool description (descriptions reach the model with every definition).
MAX_DESCRIPTION_CHARS = 16 * 1024

#: Length of the source of one confirmation template.
MAX_TEMPLATE_CHARS = 16 * 1024

#: Work one confirmation render may do: every loop iteration, call, filter, attribute or item
#: lookup and arithmetic operation counts one. A prompt listing a hundred line items needs a
#: few hundred; 10,000 costs a few milliseconds at most, so a template built to loop forever
#: stops before other runs notice (a nested 100,000 × 3,000 loop ran for minutes before).
MAX_TEMPLATE_OPERATIONS = 10_000

#: Characters one confirmation render may produce (a prompt a person reads, or a denied result
#: the model reads): 64 KiB is pages of text. Intermediate strings are held to it as well.
MAX_TEMPLATE_OUTPUT_CHARS = 64 * 1024

#: Size of one tool call's arguments (JSON text, UTF-8). Arguments are written by a model, so
#: its output budget bounds them in practice; 1 MiB leaves room for pasted documents.
MAX_ARGUMENTS_BYTES = 1024 * 1024

#: Nesting of objects and arrays in one tool call's arguments. 64 is far beyond any real
#: payload and keeps validation (pydantic, jsonschema) away from recursion limits: arguments
#: nested 5,000 deep are refused as ``invalid_arguments`` instead of crashing validation.
MAX_ARGUMENT_DEPTH = 64

#: Nesting of the JSON an external MCP tool's text result holds (the runtime parses that text;
#: structured content arrives parsed by the SDK). As for arguments, 64 is far beyond any real
#: result and keeps reading, validating and encoding it away from recursion limits: text
#: nested 5,000 deep fails the call with an ``MCPResultError`` naming the tool and this limit
#: instead of a ``RecursionError`` naming nothing.
MAX_MCP_TEXT_DEPTH = 64

#: Nesting of objects and arrays in any value validated against a tool's JSON Schema: a
#: registry or MCP tool's result, an agent tool's structured answer (arguments are held to
#: :data:`MAX_ARGUMENT_DEPTH` before). Results are written by programs and may hold documents
#: (trees, syntax) nested deeper than arguments; past 128 levels validation comes near
#: Python's recursion limit, and a result nested 800 deep crashed the call with
#: ``RecursionError`` instead of being refused as an invalid result.
MAX_VALUE_DEPTH = 128

#: Nesting of objects and arrays in a stored transcript (``transcript.loads``). Messages nest
#: a few levels, and their provider records (a tool search's output) hold tool schemas, which
#: are held to :data:`MAX_SCHEMA_DEPTH` at generation and registration: 128 is twice what a
#: transcript the runtime wrote reaches. Stored text is outside input: a transcript nested
#: 600 deep crashed ``loads`` with a ``RecursionError`` naming nothing (copying the records),
#: and 100,000 deep crashed the JSON parser.
MAX_TRANSCRIPT_DEPTH = 128

#: The largest ``max_tool_calls`` and ``max_consecutive_failed_tool_calls`` a run policy takes
#: (the DSL's ``MaxToolCalls`` and ``MaxConsecutiveFailedToolCalls`` too). A run keeps every
#: call and its result in its transcript and sends the whole transcript to the model at each
#: planning activity, and a budget of N plans up to N + 1 times: 10,000 calls of even 100
#: tokens each fill a million-token context, so a larger count bounds nothing a model can
#: run. It read as a limit where there was none (``MaxToolCalls(1_000_000)``, a slip for
#: 1,000); no limit is said by leaving the setting out (None).
MAX_TOOL_CALLS = 10_000

#: Seconds one registry request (list, resolve, call admission, retry) may take when the
#: design declares no ``Timeout(...)`` for the registry: a registry that never answers fails
#: the planning activity (or the call) instead of hanging the run.
DEFAULT_REGISTRY_TIMEOUT = 30.0
