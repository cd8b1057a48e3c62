"""Types and schemas shared by every generated package."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["JSON_SCHEMA_DIALECT", "EmptyPayload", "empty_payload_schema", "null_result_schema"]

#: The JSON Schema dialect of every tool contract.
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


class EmptyPayload(BaseModel):
    # The payload of a tool declared without Args: an empty object, nothing else.
    model_config = ConfigDict(extra="forbid")


def empty_payload_schema() -> dict[str, Any]:
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "additionalProperties": False,
        "properties": {},
        "type": "object",
    }


def null_result_schema() -> dict[str, Any]:
    return {"$schema": JSON_SCHEMA_DIALECT, "type": "null"}
