"""The registry's event loop while a large registration arrives: how long other requests wait.

Run from the repository root after ``make test``::

    .venv/bin/python bench/registry_loop.py [--tools 2000] [--repeat 5]
    .venv/bin/python bench/registry_loop.py --against /tmp/main-tree   # before/after, same run

``agentgen registry serve`` (in-memory store, ``--max-body`` 16 MiB) runs in its own process on
127.0.0.1. It serves a one-tool toolset for the probes; a provider publishes a toolset of
``--tools`` synthetic tools (2,000 tools: about 5 MB of JSON, the tools of
``bench/catalog_scale.py``, a new toolset name each repetition so that every registration is
compiled). While that registration is in flight, two probes run back to back in this process:

- **cheap request**: ``GET /health``, its round trip;
- **long-poll wake-up**: a consumer's call is claimed by the probe's provider, the consumer
  long-polls ``/v1/calls/result``, and the provider completes the call: the time from sending
  the completion until the consumer holds the result.

Each repetition reports the longest round trip of each probe while the registration was in
flight (one that started before the registration's answer came), the same while the new
toolset is then resolved for the first time (``/v1/toolsets/resolve``: the service reads the
entry it stored and encodes its answer), and the same probes on the idle registry just before
(their median): the baseline the ratios are against. The bound row
is what parsing and validating the registration's body (``RegisterRequest.model_validate_json``)
costs in this process: how long the service's loop is held if it does that itself. Rows are
medians over ``--repeat`` repetitions; the load average (one minute) is given beside them.

``--against DIR`` measures the agentgen sources in DIR as well (for instance ``git archive
main | tar -x -C DIR``), alternating the two trees (the service runs that tree's code; the
probes and the registration's body are this tree's). Everything runs on 127.0.0.1 and nothing
is written outside a temporary folder.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))  # the other benchmarks' synthetic tools and registry helpers

import httpx2  # noqa: E402
import registry as served  # noqa: E402  (bench/registry.py)
from catalog_scale import tool_declaration  # noqa: E402
from vocabulary import NOUNS, VERBS  # noqa: E402

from agentgen.runtime.contracts.declarations import ToolsetDeclaration  # noqa: E402
from agentgen.runtime.contracts.fingerprint import schema_fingerprint  # noqa: E402
from agentgen.runtime.registry import api  # noqa: E402

MAX_BODY = 16 << 20
PROBE_PROVIDER = {"provider_id": "probe", "incarnation_id": "probe-1"}
#: How long the consumer's long poll is given to reach the service before the completion.
PARK_SECONDS = 0.005
IDLE_SAMPLES = 40
#: What each repetition does to the large toolset, in order, while the probes run.
PHASES = {
    "register": "registration",
    "resolve": "first resolve",
    "renew": "lease renewal",
    "renewed": "resolve after the renewal",
}


def large_registration(tools: int, number: int) -> tuple[str, bytes]:
    """A registration body of ``tools`` tools, as a provider sends it, and its toolset's name."""
    rng = random.Random(number)
    name = f"bulk{number}"
    declared = [
        tool_declaration(
            rng,
            name,
            VERBS[index % len(VERBS)],
            f"{NOUNS[index // len(VERBS) % len(NOUNS)]}{index // (len(VERBS) * len(NOUNS))}",
        )
        for index in range(tools)
    ]
    toolset = ToolsetDeclaration.model_validate(
        {"name": name, "version": "1.0.0", "tools": declared}
    )
    body = api.RegisterRequest(
        toolset=toolset,
        schema_fingerprint=schema_fingerprint(toolset),
        revision="r1",
        provider_id="bulk",
        incarnation_id=f"bulk-{number}",
        lease_ms=3_600_000,
    )
    return name, body.model_dump_json().encode()


def parse_bound(body: bytes) -> float:
    """Seconds to parse and validate the body as the service's model (median of three)."""
    times = []
    for _ in range(3):
        started = time.perf_counter()
        api.RegisterRequest.model_validate_json(body)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


class Probes:
    """The cheap request and the long-poll wake-up, against one registry."""

    def __init__(self, client: httpx2.AsyncClient) -> None:
        self.client = client
        self.token = ""
        self.count = 0

    async def post(
        self, path: str, body: dict[str, Any] | bytes, *, read: bool = True
    ) -> dict[str, Any]:
        """The answer, parsed unless ``read`` is false (a 5 MB resolve answer would hold this
        process's loop, and with it the probes, for a quarter of a second)."""
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        response = await self.client.post(
            f"{api.API_PREFIX}{path}",
            content=content,
            headers={"content-type": "application/json"},
        )
        if response.status_code != 200:
            raise RuntimeError(f"{path}: {response.status_code} {response.text[:300]}")
        if not read:
            return {"bytes": len(response.content)}
        answer: dict[str, Any] = response.json()
        return answer

    async def publish(self) -> None:
        toolset = served.synthetic_toolset(0, tools=1)
        answer = await self.post(
            "/providers/register",
            api.RegisterRequest(
                toolset=toolset,
                schema_fingerprint=schema_fingerprint(toolset),
                revision="r1",
                provider_id=PROBE_PROVIDER["provider_id"],
                incarnation_id=PROBE_PROVIDER["incarnation_id"],
                lease_ms=3_600_000,
            )
            .model_dump_json()
            .encode(),
        )
        self.token = answer["registration_token"]

    async def cheap(self) -> float:
        started = time.perf_counter()
        response = await self.client.get("/health")
        if response.status_code != 200:
            raise RuntimeError(f"/health: {response.status_code}")
        return time.perf_counter() - started

    async def wake_up(self) -> float:
        self.count += 1
        ref = await self.post(
            "/calls",
            {
                "toolset": "set0",
                "tool": "set0.tool_0",
                "payload_json": '{"id":"x"}',
                "meta": {"run_id": f"probe-{time.time_ns()}", "tool_call_id": str(self.count)},
                "expected_registration_token": self.token,
            },
        )
        lease = {"toolset": "set0", "registration_token": self.token, **PROBE_PROVIDER}
        claimed = await self.post(
            "/providers/claim",
            {**lease, "max_calls": 1, "wait_ms": 5_000, "claim_operation_id": f"c{self.count}"},
        )
        assert [c["tool_use_id"] for c in claimed["calls"]] == [ref["tool_use_id"]], claimed
        waiting = asyncio.create_task(
            self.post(
                "/calls/result",
                {
                    "tool_use_id": ref["tool_use_id"],
                    "registration_token": self.token,
                    "wait_ms": 30_000,
                },
            )
        )
        await asyncio.sleep(PARK_SECONDS)
        started = time.perf_counter()
        await self.post(
            "/providers/complete",
            {
                "toolset": "set0",
                "tool_use_id": ref["tool_use_id"],
                "status": "completed",
                "result_json": '{"ok":true}',
                **PROBE_PROVIDER,
            },
        )
        outcome = await waiting
        elapsed = time.perf_counter() - started
        assert outcome["status"] == "completed", outcome
        return elapsed


async def _repeatedly(
    probe: Callable[[], Awaitable[float]], until: asyncio.Future[Any]
) -> list[float]:
    times = []
    while not until.done():
        times.append(await probe())
    return times


async def during(
    probes: Probes, request: Awaitable[dict[str, Any]], sample: dict[str, float], name: str
) -> dict[str, Any]:
    """The request's answer; its round trip and the longest round trip of each probe meanwhile
    go into ``sample`` under ``name``."""
    started = time.perf_counter()
    task = asyncio.ensure_future(request)
    cheap, wake = await asyncio.gather(
        _repeatedly(probes.cheap, task), _repeatedly(probes.wake_up, task)
    )
    answer = await task
    sample[name] = time.perf_counter() - started
    sample[f"{name}_cheap"], sample[f"{name}_wake"] = max(cheap), max(wake)
    return answer


async def repetition(probes: Probes, name: str, body: bytes) -> dict[str, float]:
    """The idle probes, then the same probes while ``body`` is registered, while the new
    toolset is resolved for the first time, while its lease is renewed, and while it is
    resolved again after that."""
    idle_cheap = [await probes.cheap() for _ in range(IDLE_SAMPLES)]
    idle_wake = [await probes.wake_up() for _ in range(IDLE_SAMPLES // 4)]
    sample = {
        "idle_cheap": statistics.median(idle_cheap),
        "idle_wake": statistics.median(idle_wake),
    }
    registered = await during(probes, probes.post("/providers/register", body), sample, "register")
    resolve = {"toolset": name}
    await during(probes, probes.post("/toolsets/resolve", resolve, read=False), sample, "resolve")
    lease = {
        "toolset": name,
        "registration_token": registered["registration_token"],
        "provider_id": "bulk",
        "incarnation_id": json.loads(body)["incarnation_id"],
        "lease_ms": 3_600_000,
    }
    await during(probes, probes.post("/providers/renew", lease), sample, "renew")
    await during(probes, probes.post("/toolsets/resolve", resolve, read=False), sample, "renewed")
    return sample


async def measure_tree(url: str, bodies: Sequence[tuple[str, bytes]]) -> list[dict[str, float]]:
    limits = httpx2.Limits(max_connections=16)
    async with httpx2.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        probes = Probes(client)
        await probes.publish()
        for _ in range(5):  # connections open, caches warm
            await probes.cheap()
            await probes.wake_up()
        samples = []
        for name, body in bodies:
            load_average = os.getloadavg()[0]
            sample = await repetition(probes, name, body)
            sample["load"] = (load_average + os.getloadavg()[0]) / 2
            samples.append(sample)
            print(
                "  longest /health during: "
                + ", ".join(f"{p} {sample[f'{p}_cheap'] * 1000:.0f} ms" for p in PHASES),
                file=sys.stderr,
                flush=True,
            )
        return samples


@dataclass
class Column:
    samples: list[dict[str, float]] = field(default_factory=list)

    def median(self, key: str) -> float:
        return statistics.median(s[key] for s in self.samples)


def table(columns: dict[str, Column], bound: float, tools: int, size: int) -> list[str]:
    labels = list(columns)
    lines = [
        f"Registration of {tools:,} tools ({size / 1e6:.1f} MB); medians of "
        f"{len(columns[labels[0]].samples)} repetitions.",
        "",
        "| measure | " + " | ".join(labels) + " |",
        "|---|" + "---:|" * len(labels),
    ]

    def row(name: str, cell: Callable[[Column], str]) -> None:
        lines.append(f"| {name} | " + " | ".join(cell(columns[label]) for label in labels) + " |")

    def ms(key: str) -> Callable[[Column], str]:
        return lambda c: f"{c.median(key) * 1000:,.1f} ms"

    def ratio(key: str, base: str) -> Callable[[Column], str]:
        return lambda c: f"{statistics.median(s[key] / s[base] for s in c.samples):,.1f}x"

    row("bound: parse + validate the body (this process)", lambda c: f"{bound * 1000:,.1f} ms")
    row("/health, idle p50 (baseline)", ms("idle_cheap"))
    row("long-poll wake-up, idle p50 (baseline)", ms("idle_wake"))
    for phase, what in PHASES.items():
        row(f"**{what}**: round trip", ms(phase))
        row("  /health, longest meanwhile", ms(f"{phase}_cheap"))
        row("    / idle p50", ratio(f"{phase}_cheap", "idle_cheap"))
        row("  long-poll wake-up, longest meanwhile", ms(f"{phase}_wake"))
        row("    / idle p50", ratio(f"{phase}_wake", "idle_wake"))
    row("load average", lambda c: f"{c.median('load'):.2f}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench/registry_loop.py", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--tools", type=int, default=2000, help="tools of the large toolset")
    parser.add_argument("--repeat", type=int, default=5, help="registrations per tree (median)")
    parser.add_argument("--store", default="memory", help="the service's --store")
    parser.add_argument(
        "--against", type=Path, help="also measure the agentgen sources in this folder"
    )
    args = parser.parse_args(argv)
    bodies = [large_registration(args.tools, number) for number in range(args.repeat)]
    bound = parse_bound(bodies[0][1])
    columns: dict[str, Column] = {}
    with tempfile.TemporaryDirectory(prefix="agentgen-bench-tree-") as links:
        trees = [served.Tree("this tree")]
        if args.against is not None:
            trees.append(served.tree_of(args.against, Path(links)))
        for round_number in range(2 if len(trees) > 1 else 1):
            order = trees if round_number % 2 == 0 else list(reversed(trees))
            for tree in order:
                print(f"{tree.label}:", file=sys.stderr, flush=True)
                half = bodies if len(trees) == 1 else bodies[round_number::2]
                options = ("--max-body", str(MAX_BODY))
                with served.registry(tree, args.store, *options) as (url, _):
                    samples = asyncio.run(measure_tree(url, half))
                columns.setdefault(tree.label, Column()).samples.extend(samples)
    print("\n".join(table(columns, bound, args.tools, len(bodies[0][1]))))
    print(json.dumps({"python": sys.version.split()[0], "cores": os.cpu_count()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
