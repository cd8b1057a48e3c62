"""How long the event loop is held by bad input from registries and models.

Three inputs from the hardening issue, each handled two ways in the same run:

- a ReDoS ``pattern`` (``^([a-z0-9]+-?)*[a-z0-9]+\\.example\\.com$``) against ``a…a!`` of growing
  length: jsonschema's own ``Draft202012Validator`` (Python's backtracking ``re``, the peer)
  versus agentgen's ``SchemaCodec`` (RE2);
- a confirmation template with nested loops: Jinja's ``ImmutableSandboxedEnvironment`` (the
  peer) versus agentgen's budgeted sandbox, which stops at its operation budget;
- a 1.3 MB registry payload schema: checking and building jsonschema's validator for it (the
  peer; what compiling it meant before the size limit) versus ``contracts.compile``, which
  refuses it;
- a 3 KB schema whose references fan out (40 branches of 40 of 40): validating one value with
  jsonschema (the peer) versus ``contracts.compile``, which refuses the schema;
- a recursive schema applying itself twice to one property, against a value 16 levels deep:
  jsonschema (the peer) versus ``SchemaCodec``, which stops at its validation budget;
- ``round`` to a huge number of digits in a confirmation template: Jinja's sandbox (the peer)
  versus agentgen's, which refuses it before it runs;
- a 10,000-value ``enum`` on 200 array items, and ``uniqueItems`` over 1,000 objects:
  jsonschema (the peer; it compares values pair by pair) versus ``SchemaCodec``, which hashes
  each value once.

Every row is the median of a few repetitions of one handling, in seconds (all of it time the
event loop cannot run anything else), and the ratio peer / agentgen.

    python bench/bad_input.py [--repeat 3] [--no-peers]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jsonschema
from jinja2 import StrictUndefined
from jinja2.sandbox import ImmutableSandboxedEnvironment

from agentgen.runtime.contracts.codecs import PayloadError, SchemaCodec
from agentgen.runtime.contracts.compiler import compile
from agentgen.runtime.contracts.declarations import ContractError
from agentgen.runtime.contracts.wire import tool_schema
from agentgen.runtime.runs.confirmation import ConfirmationError, render
from agentgen.runtime.search.document import SearchDocument

REDOS = r"^([a-z0-9]+-?)*[a-z0-9]+\.example\.com$"


def median(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@dataclass(frozen=True)
class Timing:
    """How each handling is timed: ``repeat`` times, the median; the peers' only with
    ``peers`` (without, agentgen's handling alone runs: a quick check that it still refuses or
    stops each input)."""

    repeat: int
    peers: bool = True

    def ours(self, run: Callable[[], object]) -> float:
        return median(run, self.repeat)

    def peer(self, run: Callable[[], object]) -> float | None:
        return median(run, self.repeat) if self.peers else None


def redos(timing: Timing) -> list[tuple[str, float | None, float]]:
    schema = {"type": "object", "properties": {"host": {"type": "string", "pattern": REDOS}}}
    peer = jsonschema.Draft202012Validator(schema)
    codec = SchemaCodec(copy.deepcopy(schema), "bench")
    rows = []
    for length in (17, 19, 21, 23):
        value = {"host": "a" * (length - 1) + "!"}

        def ours(value: Any = value) -> None:
            with contextlib.suppress(PayloadError):
                codec.decode(value)

        rows.append(
            (
                f"ReDoS pattern, {length} characters",
                timing.peer(lambda value=value: peer.is_valid(value)),
                timing.ours(ours),
            )
        )
    return rows


def template(timing: Timing) -> list[tuple[str, float | None, float]]:
    rows = []
    peer = ImmutableSandboxedEnvironment(undefined=StrictUndefined)
    for outer in (30, 300):
        source = (
            f"{{% for i in range({outer}) %}}{{% for j in range(3000) %}}{{{{ j }}}}"
            "{% endfor %}{% endfor %}"
        )

        def ours(source: str = source) -> None:
            with contextlib.suppress(ConfirmationError):
                render(source, {}, tool_id="bench.tool", which="confirmation prompt")

        rows.append(
            (
                f"loop template, {outer} x 3,000 iterations",
                timing.peer(lambda source=source: peer.from_string(source).render()),
                timing.ours(ours),
            )
        )
    return rows


def refusal(payload: dict[str, Any], what: str) -> Callable[[], None]:
    """Compiling a declaration with ``payload`` as its payload schema, which must be refused."""
    declaration = _declaration(payload)

    def ours() -> None:
        try:
            compile(declaration, toolset="bench")
        except ContractError:
            return
        raise AssertionError(f"{what} was not refused")

    return ours


def _declaration(payload: dict[str, Any]) -> dict[str, Any]:
    declaration = tool_schema(
        tool_id="bench.tool",
        title="Bench",
        description="A tool.",
        tags=(),
        payload_schema={"type": "object"},
        payload_name=None,
        result_schema={"type": "object"},
        result_name=None,
        search=SearchDocument.from_text("bench.tool"),
    ).to_json()
    declaration["payload_schema"] = declaration["execution_payload_schema"] = payload
    return declaration


def big_schema(timing: Timing) -> list[tuple[str, float | None, float]]:
    properties = {
        f"field_{i:05d}": {"type": "string", "description": "x" * 40, "maxLength": 100}
        for i in range(12_000)
    }
    payload = {"type": "object", "properties": properties}

    def peer() -> None:
        jsonschema.Draft202012Validator.check_schema(payload)
        jsonschema.Draft202012Validator(payload)

    ours = refusal(payload, "the 1.3 MB schema")
    size = len(json.dumps(payload)) / 1e6
    return [(f"{size:.1f} MB payload schema", timing.peer(peer), timing.ours(ours))]


def fan_out(timing: Timing) -> list[tuple[str, float | None, float]]:
    defs: dict[str, Any] = {"d3": {"type": "string", "minLength": 3}}
    for level in range(3):
        defs[f"d{level}"] = {"anyOf": [{"$ref": f"#/$defs/d{level + 1}"}] * 40}
    payload = {"type": "object", "$defs": defs, "properties": {"x": {"$ref": "#/$defs/d0"}}}
    peer = jsonschema.Draft202012Validator(payload)
    ours = refusal(payload, "the fan-out schema")
    size = len(json.dumps(payload)) / 1e3
    return [
        (
            f"{size:.0f} KB schema of references fanning out 40 x 40 x 40",
            timing.peer(lambda: peer.is_valid({"x": "a"})),
            timing.ours(ours),
        )
    ]


def applied_twice(timing: Timing) -> list[tuple[str, float | None, float]]:
    twice = {"properties": {"x": {"$ref": "#/$defs/node"}}}
    payload = {
        "type": "object",
        "$defs": {"node": {"type": "object", "allOf": [twice, twice]}},
        "properties": {"x": {"$ref": "#/$defs/node"}},
    }
    value: Any = 5
    for _ in range(16):
        value = {"x": value}
    peer = jsonschema.Draft202012Validator(payload)
    codec = SchemaCodec(copy.deepcopy(payload), "bench")

    def ours() -> None:
        with contextlib.suppress(PayloadError):
            codec.decode(value)

    return [
        (
            "schema applying itself twice, value 16 levels deep",
            timing.peer(lambda: list(peer.iter_errors(value))),
            timing.ours(ours),
        )
    ]


def large_enum(timing: Timing) -> list[tuple[str, float | None, float]]:
    schema = {
        "type": "object",
        "properties": {"ids": {"type": "array", "items": {"enum": list(range(10_000))}}},
    }
    value = {"ids": [9_999] * 200}
    peer = jsonschema.Draft202012Validator(schema)
    codec = SchemaCodec(copy.deepcopy(schema), "bench")
    return [
        (
            "10,000-value enum, 200 items checked",
            timing.peer(lambda: peer.is_valid(value)),
            timing.ours(lambda: codec.decode(value)),
        )
    ]


def unique_objects(timing: Timing) -> list[tuple[str, float | None, float]]:
    schema = {"type": "object", "properties": {"rows": {"type": "array", "uniqueItems": True}}}
    value = {"rows": [{"a": i} for i in range(1_000)]}
    peer = jsonschema.Draft202012Validator(schema)
    codec = SchemaCodec(copy.deepcopy(schema), "bench")
    return [
        (
            "uniqueItems over 1,000 objects",
            timing.peer(lambda: peer.is_valid(value)),
            timing.ours(lambda: codec.decode(value)),
        )
    ]


def rounding(timing: Timing) -> list[tuple[str, float | None, float]]:
    source = "{{ n | round(-3000000) }}"
    peer = ImmutableSandboxedEnvironment(undefined=StrictUndefined)

    def ours() -> None:
        with contextlib.suppress(ConfirmationError):
            render(source, {"n": 10**300}, tool_id="bench.tool", which="confirmation prompt")

    return [
        (
            "template rounding to 3,000,000 digits",
            timing.peer(lambda: peer.from_string(source).render(n=10**300)),
            timing.ours(ours),
        )
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--no-peers",
        action="store_true",
        help="time agentgen's handling alone (seconds instead of a minute; no ratios)",
    )
    args = parser.parse_args()
    timing = Timing(args.repeat, peers=not args.no_peers)
    rows = [
        *redos(timing),
        *template(timing),
        *big_schema(timing),
        *fan_out(timing),
        *applied_twice(timing),
        *large_enum(timing),
        *unique_objects(timing),
        *rounding(timing),
    ]
    print("| input | peer (s) | agentgen (s) | peer / agentgen |")
    print("|---|---:|---:|---:|")
    for name, peer, ours in rows:
        if peer is None:
            print(f"| {name} |  | {ours:.5f} |  |")
        else:
            print(f"| {name} | {peer:.4f} | {ours:.5f} | {peer / ours:,.0f}x |")


if __name__ == "__main__":
    main()
