"""Schema fingerprints and registration tokens.

A fingerprint identifies a toolset's contract: the SHA-256 of a canonical JSON body holding the
toolset's name, description, version and sorted tags, and its tools sorted by name with their
description, sorted tags, payload, execution payload and result schemas and consumer contract.
Tag and tool order do not change it; any schema byte, description, version or contract change
does. A registration token binds a fingerprint to a provider revision and a wire protocol
version: calls admitted under one token never run against another contract.
"""

from __future__ import annotations

import hashlib
import re
import struct
from collections.abc import Mapping
from typing import Any

from agentgen.runtime.contracts.canonical import canonical_json
from agentgen.runtime.contracts.declarations import ToolsetDeclaration

__all__ = [
    "HEX64",
    "REVISION_PATTERN",
    "TOKEN_DOMAIN",
    "WIRE_PROTOCOL_VERSION",
    "fingerprint_body",
    "registration_token",
    "schema_fingerprint",
]

#: The registry wire protocol this runtime speaks; part of every registration token.
WIRE_PROTOCOL_VERSION = 1
TOKEN_DOMAIN = b"agentgen/tool-registry-admission/v1\x00"
REVISION_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+\-]{0,255}$")
HEX64 = re.compile(r"^[0-9a-f]{64}$")


def _tool_body(tool: Mapping[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": tool["name"],
        "payload_schema": tool["payload_schema"],
        "execution_payload_schema": tool["execution_payload_schema"],
        "result_schema": tool["result_schema"],
    }
    if tool.get("description") is not None:
        body["description"] = tool["description"]
    if tool.get("tags"):
        body["tags"] = sorted(tool["tags"])
    if tool.get("consumer_contract") is not None:
        body["consumer_contract"] = tool["consumer_contract"]
    return body


def fingerprint_body(toolset: ToolsetDeclaration | Mapping[str, Any]) -> dict[str, Any]:
    """The canonical body a fingerprint hashes, from a declaration or its wire JSON
    (exposed for tools that explain a mismatch)."""
    data = toolset.to_json() if isinstance(toolset, ToolsetDeclaration) else toolset
    tools = sorted(data.get("tools", []), key=lambda tool: tool["name"])
    body: dict[str, Any] = {"name": data["name"], "tools": [_tool_body(t) for t in tools]}
    if data.get("description") is not None:
        body["description"] = data["description"]
    if data.get("version") is not None:
        body["version"] = data["version"]
    if data.get("tags"):
        body["tags"] = sorted(data["tags"])
    return body


def schema_fingerprint(toolset: ToolsetDeclaration | Mapping[str, Any]) -> str:
    """Lowercase hex SHA-256 of :func:`fingerprint_body` in canonical JSON.

    The body is made and encoded one tool at a time: as one tree of dicts and lists, the body
    of 2,000 tools is about 100,000 objects alive at once, all walked by each collection of
    Python's garbage collector meanwhile (the registry fingerprints every registration).
    """
    head: Mapping[str, Any]
    if isinstance(toolset, ToolsetDeclaration):
        head = toolset.model_dump(
            mode="json", by_alias=True, exclude_defaults=True, exclude={"tools"}
        )
        ordered = sorted(toolset.tools, key=lambda tool: tool.name)
        tools = [canonical_json(_tool_body(tool.to_json())) for tool in ordered]
    else:
        head = toolset
        by_name = sorted(toolset.get("tools", []), key=lambda tool: tool["name"])
        tools = [canonical_json(_tool_body(tool)) for tool in by_name]
    body = fingerprint_body({**head, "tools": []})
    # canonical_json(body), with the tools' canonical forms as the value of "tools".
    members = [
        f"{canonical_json(key)}:"
        + ("[" + ",".join(tools) + "]" if key == "tools" else canonical_json(value))
        for key, value in sorted(body.items())
    ]
    text = "{" + ",".join(members) + "}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def registration_token(
    fingerprint: str, revision: str, wire_version: int = WIRE_PROTOCOL_VERSION
) -> str:
    """SHA-256 over the domain, the wire version, the fingerprint bytes and the revision.

    Identical inputs always give the identical token, so a provider restarting with the same
    contract and revision is admitted again under the same token.
    """
    if not HEX64.match(fingerprint):
        raise ValueError("schema fingerprint must be 64 lowercase hex digits (a SHA-256)")
    if not REVISION_PATTERN.match(revision):
        raise ValueError(
            f"provider revision {revision!r} must match {REVISION_PATTERN.pattern} "
            "(letters, digits and ._:/@+-, at most 256 characters)"
        )
    if not 0 <= wire_version <= 0xFFFFFFFF:
        raise ValueError("wire protocol version must fit an unsigned 32-bit integer")
    encoded = revision.encode("utf-8")
    body = (
        TOKEN_DOMAIN
        + struct.pack(">I", wire_version)
        + bytes.fromhex(fingerprint)
        + struct.pack(">I", len(encoded))
        + encoded
    )
    return hashlib.sha256(body).hexdigest()
