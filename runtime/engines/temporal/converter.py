"""The data converter: the runtime's values as JSON in Temporal payloads.

Workflow inputs, activity tasks and results are the runtime's own dataclasses (messages, run
contexts, policies, step values). Each is written as a JSON object, field by field, following
its type hints, and read back the same way; the payload's metadata names the type (a stable
name, so histories written by one release are read by the next). A field added to a type is left
out while it holds its default (:mod:`agentgen.runtime.wire_fields`), so that a worker of the
release before reads every payload of a run that does not use what it adds. Messages use their
own JSON form (metadata, native search records and all). A planning answer whose calls carry
large arguments writes them once (:mod:`.shared_arguments`). Fields typed ``Any`` hold JSON values a
planner or a tool produced (arguments, structured answers, checkpoints): they keep exact
numbers, written as ``{"exact": "<JSON text>"}`` when they hold ``Decimal`` values and as
``{"json": <value>}`` otherwise, so that a value comes back with the types it left with. A
pydantic model in such a field crosses as its JSON object.

Anything else (strings, numbers, ``None``) falls through to Temporal's default converters.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import threading
import types
import typing
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any, Literal, TypeVar, Union

from pydantic import BaseModel
from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    CompositePayloadConverter,
    DataConverter,
    DefaultPayloadConverter,
    EncodingPayloadConverter,
)

from agentgen.runtime.agents.definition import RunPolicy, TagClause
from agentgen.runtime.agents.planning import RunContext
from agentgen.runtime.contracts.codecs import decode_exact, encode_exact
from agentgen.runtime.contracts.model_numbers import decimals_as_numbers
from agentgen.runtime.engines.temporal.settings import TemporalSettings
from agentgen.runtime.engines.temporal.shared_arguments import share, unshare
from agentgen.runtime.engines.temporal.wire import (
    AwaitTask,
    CallTask,
    Decide,
    DenyTask,
    ResultTask,
    RunInput,
    RunStatus,
)
from agentgen.runtime.messages import Message, TextPart, ToolCallPart, ToolResultPart
from agentgen.runtime.registry.client import CallRef
from agentgen.runtime.runs.loop import RunResult, RunState
from agentgen.runtime.runs.requests import RunRequest
from agentgen.runtime.runs.steps import (
    Admission,
    ChildOutcome,
    ConfirmationDecision,
    ConfirmationRequest,
    Decision,
    Limits,
    Planned,
    PlanTask,
    Prepared,
)
from agentgen.runtime.wire_fields import is_added

__all__ = [
    "ENCODING",
    "TYPES",
    "AgentgenPayloadConverter",
    "data_converter",
    "decode",
    "encode",
    "measured_payload",
]

ENCODING = "json/agentgen"

#: Every type this converter writes, by the stable name its payloads carry.
TYPES: Mapping[str, type] = {
    f"agentgen.{cls.__name__}": cls
    for cls in (
        Admission,
        AwaitTask,
        CallRef,
        CallTask,
        ChildOutcome,
        ConfirmationDecision,
        ConfirmationRequest,
        Decide,
        Decision,
        DenyTask,
        Limits,
        Message,
        PlanTask,
        Planned,
        Prepared,
        ResultTask,
        RunContext,
        RunInput,
        RunPolicy,
        RunRequest,
        RunResult,
        RunState,
        RunStatus,
        TagClause,
        TemporalSettings,
        TextPart,
        ToolCallPart,
        ToolResultPart,
    )
}
_NAMES = {cls: name for name, cls in TYPES.items()}


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


#: The default of a field every payload of its type writes.
_ALWAYS = object()


@functools.cache
def _fields(cls: type) -> tuple[tuple[str, Any, Any], ...]:
    """Each field of ``cls`` (a dataclass): its name, type and, for a field added to it
    (:data:`~agentgen.runtime.wire_fields.ADDED`), the default with which it is left out (else
    :data:`_ALWAYS`). Its readers take a missing field for its default."""
    hints = _hints(cls)
    return tuple(
        (f.name, hints[f.name], _default(f) if is_added(f) else _ALWAYS)
        for f in dataclasses.fields(cls)
    )


def _default(field: dataclasses.Field[Any]) -> Any:
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    if field.default is dataclasses.MISSING:
        raise TypeError(f"the added field {field.name!r} has no default to leave out")
    return field.default


def _optional(hint: Any) -> Any:
    """The type of ``X | None``; any other union is not a field type of the runtime's."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if len(args) != 1:
        raise TypeError(f"the data converter cannot write a field of type {hint}")
    return args[0]


def _is_union(origin: Any) -> bool:
    return origin is Union or origin is types.UnionType


def encode(value: Any, hint: Any) -> Any:
    """``value`` as JSON values, following ``hint``."""
    if value is None:
        return None
    if hint is Any or isinstance(hint, TypeVar):
        return _encode_any(value)
    origin = typing.get_origin(hint)
    if _is_union(origin):
        return encode(value, _optional(hint))
    cls = origin if isinstance(origin, type) and dataclasses.is_dataclass(origin) else hint
    if cls is Message:
        return value.to_json()
    if isinstance(cls, type) and dataclasses.is_dataclass(cls):
        written = {}
        for name, field_hint, default in _fields(cls):
            item = getattr(value, name)
            if default is _ALWAYS or item != default:
                written[name] = encode(item, field_hint)
        return share(written) if cls is Planned else written
    if origin in (tuple, list, Sequence):
        item = typing.get_args(hint)[0]
        return [encode(v, item) for v in value]
    if origin in (dict, Mapping):
        item = typing.get_args(hint)[1]
        return {str(k): encode(v, item) for k, v in value.items()}
    if origin is Literal or hint in (str, int, float, bool):
        return value
    raise TypeError(f"the data converter cannot write a value of type {hint}")


def decode(data: Any, hint: Any) -> Any:
    """The value ``encode`` wrote for ``hint``."""
    if data is None:
        return None
    if hint is Any or isinstance(hint, TypeVar):
        return _decode_any(data)
    origin = typing.get_origin(hint)
    if _is_union(origin):
        return decode(data, _optional(hint))
    cls = origin if isinstance(origin, type) and dataclasses.is_dataclass(origin) else hint
    if cls is Message:
        return Message.from_json(data)
    if isinstance(cls, type) and dataclasses.is_dataclass(cls):
        if cls is Planned:
            data = unshare(data)
        hints = _hints(cls)
        fields = {f.name for f in dataclasses.fields(cls) if f.init}
        unknown = set(data) - fields
        if unknown:
            raise ValueError(f"{cls.__name__} has no fields {sorted(unknown)}")
        return cls(**{name: decode(data[name], hints[name]) for name in fields if name in data})
    if origin is list:
        return [decode(v, typing.get_args(hint)[0]) for v in data]
    if origin in (tuple, Sequence):
        return tuple(decode(v, typing.get_args(hint)[0]) for v in data)
    if origin in (dict, Mapping):
        item = typing.get_args(hint)[1]
        return {k: decode(v, item) for k, v in data.items()}
    if hint is float:
        return float(data)
    if origin is Literal or hint in (str, int, bool):
        return data
    raise TypeError(f"the data converter cannot read a value of type {hint}")


def _encode_any(value: Any) -> dict[str, Any]:
    if isinstance(value, BaseModel):
        # pydantic writes a Decimal as a string; the model held a number (a child run's answer
        # read by its parent's agent tool contract), which crosses exactly.
        value = decimals_as_numbers(value, value.model_dump(mode="json", by_alias=True))
    if _has_decimal(value):
        return {"exact": encode_exact(value)}
    return {"json": value}


def _decode_any(data: Any) -> Any:
    if not isinstance(data, dict) or len(data) != 1:
        raise ValueError("a JSON value is written as {'json': value} or {'exact': text}")
    if "exact" in data:
        return decode_exact(data["exact"])
    return data["json"]


def _has_decimal(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Decimal):
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


class _RuntimeJSONConverter(EncodingPayloadConverter):
    """The runtime's dataclasses, as JSON named by their stable type name."""

    @property
    def encoding(self) -> str:
        return ENCODING

    def to_payload(self, value: Any) -> Payload | None:
        kept: tuple[Any, Payload] | None = getattr(_measured, "value", None)
        if kept is not None and kept[0] is value:
            # The payload the size check just made of this very object: not written again.
            _measured.value = None
            return kept[1]
        return _payload(value)

    def from_payload(self, payload: Payload, type_hint: type | None = None) -> Any:
        name = payload.metadata.get("type", b"").decode()
        cls = TYPES.get(name)
        if cls is None:
            raise RuntimeError(f"payload of unknown agentgen type {name!r}")
        try:
            return decode(json.loads(payload.data), cls)
        except (TypeError, ValueError, KeyError) as exc:
            raise RuntimeError(f"payload of type {name!r} could not be read: {exc}") from exc


def _payload(value: Any) -> Payload | None:
    name = _NAMES.get(type(value))
    if name is None:
        return None
    data = json.dumps(encode(value, type(value)), ensure_ascii=False, separators=(",", ":"))
    return Payload(
        metadata={"encoding": ENCODING.encode(), "type": name.encode()},
        data=data.encode(),
    )


#: The last payload :func:`measured_payload` made in this thread, and the object it was made
#: of: kept (a strong reference, so the object's identity cannot be reused) for the SDK's
#: conversion of that same object, which follows at once, and given to it once.
_measured = threading.local()


def measured_payload(value: Any) -> Payload | None:
    """``value``'s payload when it is one of the runtime's types (else None), to measure it.

    A durable run checks the size of what it is about to send (an activity's answer, an
    activity's input, a child run's or a continuation's input) just before the SDK converts
    the same object to send it: the payload made here is kept, and that conversion takes it
    instead of writing the value again (a planning input holds the whole transcript). The
    values are frozen, or not changed between the check and the send; any other conversion
    writes its value as usual.
    """
    payload = _payload(value)
    _measured.value = (value, payload) if payload is not None else None
    return payload


class AgentgenPayloadConverter(CompositePayloadConverter):
    """The runtime's types first, then Temporal's default converters for everything else."""

    def __init__(self) -> None:
        super().__init__(
            _RuntimeJSONConverter(), *DefaultPayloadConverter.default_encoding_payload_converters
        )


def data_converter() -> DataConverter:
    """The data converter every client and worker of agentgen's durable runs uses."""
    return DataConverter(payload_converter_class=AgentgenPayloadConverter)
