"""Checking that a JSON Schema is a valid 2020-12 schema, fast enough for whole registries.

A registry catalog checks every schema of every tool it compiles, and jsonschema's own
``check_schema`` interprets the 2020-12 meta-schema in Python: several milliseconds per schema,
most of a large catalog's build. Here the same meta-schema is compiled once by jsonschema-rs,
with the same format assertions jsonschema makes when it checks a schema (its
``FORMAT_CHECKER``: ``regex`` with Python's ``re``, which validation later uses, and nothing
for formats it has no checker for), so a schema is accepted exactly when jsonschema would
accept it, in microseconds. A schema the fast check refuses is checked again by jsonschema,
so that the error reads as it always has.
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["check_schema"]

# Every format the JSON Schema specifications define; the meta-schemas use a few of them
# (uri, uri-reference, regex), and each is judged the way jsonschema's checker judges it.
_FORMATS = (
    "date", "date-time", "duration", "email", "hostname", "idn-email", "idn-hostname", "ipv4",
    "ipv6", "iri", "iri-reference", "json-pointer", "regex", "relative-json-pointer", "time",
    "uri", "uri-reference", "uri-template", "uuid",
)  # fmt: skip


@functools.cache
def _meta_validator() -> Any:
    """The compiled 2020-12 meta-schema (built once per process, on first use; two threads
    may both build it, and either result is the same validator)."""
    import jsonschema  # type: ignore[import-untyped, unused-ignore]
    import jsonschema_rs

    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER

    def judge(name: str) -> Any:
        return lambda value: checker.conforms(value, name)

    return jsonschema_rs.Draft202012Validator(
        jsonschema.Draft202012Validator.META_SCHEMA,
        formats={name: judge(name) for name in _FORMATS},
        validate_formats=True,
    )


def check_schema(schema: Any) -> None:
    """Raise ``jsonschema.SchemaError`` unless ``schema`` is a valid JSON Schema (2020-12),
    the same verdict as ``jsonschema.Draft202012Validator.check_schema``."""
    meta = _meta_validator()
    try:
        if meta.is_valid(schema):
            return
        reason = None
    except ValueError as exc:  # not JSON (a set, a non-string key): jsonschema decides
        reason = str(exc)
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(schema)  # raises with jsonschema's message
    if reason is not None:
        return  # not JSON data, but jsonschema accepts it: as before
    # jsonschema accepts what the compiled meta-schema refuses (only values that are not
    # JSON, such as NaN, get here): refuse it, with the compiled check's reason.
    error = next(iter(meta.iter_errors(schema)))
    raise jsonschema.SchemaError(error.message)
