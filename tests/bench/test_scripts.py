"""Every benchmark under ``bench/`` still runs on the current code, at its smallest size.

The benchmarks are not timed here (their numbers depend on the machine): an API change that
breaks one used to go unnoticed until someone ran it. Each script runs as its README says, from
the repository root in a process of its own, with arguments that make it cheap (a few tools, one
repetition, one worker); the test checks that it exits 0 and prints its result rows.

Only the core and ``[dev]`` dependencies are needed, which ``make test`` installs: ``search.py``
and ``bad_input.py`` run with ``--no-peers`` (agentgen's side alone; the peers ``search.py``
compares with are the ``[bench]`` extra). ``search_eval/collect.py`` is left out: it installs
MCP servers from npm and PyPI.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Script:
    path: str
    args: tuple[str, ...]
    #: Patterns each of which a line of the output must match (its result rows).
    rows: tuple[str, ...]


SCRIPTS = [
    Script(
        "bench/bad_input.py",
        ("--repeat", "1", "--no-peers"),
        (
            r"^\| input \| peer \(s\) \| agentgen \(s\) \| peer / agentgen \|$",
            r"^\| ReDoS pattern, 23 characters \|  \| [\d,]+\.\d+ \|  \|$",
            r"^\| 1\.3 MB payload schema \|  \| [\d,]+\.\d+ \|  \|$",
            r"^\| template rounding to 3,000,000 digits \|  \| [\d,]+\.\d+ \|  \|$",
        ),
    ),
    Script(
        "bench/catalog_scale.py",
        ("--sizes", "10", "--repeat", "1"),
        (
            r"^\| cold build \(parse \+ compile\) \| 10 \| [\d.,]+ ms \| parse payload: ",
            r"^\| catalog memory \(RSS\) \| 10 \| ",
            r"^\| Anthropic first request: adapter \+ SDK \| 10 \| ",
            r"^\| search \+ call \(2 rounds\) \| 10 \| [\d.,]+ ms \| index \+ query: ",
        ),
    ),
    Script(
        "bench/engines.py",
        (
            *("--runs", "1", "--temporal-runs", "1", "--throughput-runs", "2"),
            *("--memory-runs", "2", "--concurrency", "2", "--workers", "1"),
        ),
        (
            r"^\| engine \| per run p50 \(ms\) \| per run p90 \(ms\) \| runs/s, 1 worker \|$",
            r"^\| in memory \| [\d.,]+ \| [\d.,]+ \| [\d,]+ \|$",
            r"^\| Temporal dev server \| [\d.,]+ \| [\d.,]+ \| [\d,.]+ \|$",
            r"^Of one run's time on Temporal, \d+ ms is its \d+ workflow tasks waiting",
        ),
    ),
    Script(
        "bench/failed_spans.py",
        ("--spans", "10", "--rounds", "1"),
        (
            r"^\| SDK record_exception \+ status \(peer\) \| [\d.,]+ \| 1\.00 \|$",
            r"^\| agentgen, capture on \| [\d.,]+ \| [\d.,]+ \|$",
        ),
    ),
    Script(
        "bench/first_request.py",
        (
            "--sizes",
            "10",
        ),
        (
            r"^\| OpenAI Responses \| 10 \| [\d,]+ \| [\d,]+ \| [\d,]+ \| [\d,]+ \| [\d,]+ \| ",
            r"^\| Anthropic Messages \| 10 \| [\d,]+ \| [\d,]+ \| [\d,]+ \| [\d,]+ \| [\d,]+ \| ",
        ),
    ),
    Script(
        "bench/gen_scaling.py",
        ("--sizes", "10", "--repeat", "1"),
        (r"^\| 10 \| [\d,]+ \| [\d.,]+ \| [\d,]+ \| [\d.,]+ \| [\d,]+ \|$",),
    ),
    Script(
        "bench/heartbeats.py",
        ("--runs", "1", "--seconds", "1", "--heartbeat-timeouts", "3", "--intervals", "default"),
        (r"^\| default \| 3 \| [\d.]+ \| [\d.]+ \|$",),
    ),
    Script(
        "bench/registry.py",
        (
            *("--calls", "5", "--callers", "1", "--stores", "sqlite", "--toolsets", "1"),
            *("--repeat", "1"),
        ),
        (
            r"^\| sqlite \| 1 \| [\d.,]+ \| [\d.,]+ \| [\d,]+ \| ",
            r"^\| 1 \| 5 \| [\d.,]+ \| [\d.,]+ \| ",
        ),
    ),
    Script(
        "bench/registry_loop.py",
        ("--tools", "10", "--repeat", "1"),
        (
            r"^\| \*\*registration\*\*: round trip \| [\d.,]+ ms \|$",
            r"^\|   long-poll wake-up, longest meanwhile \| [\d.,]+ ms \|$",
        ),
    ),
    Script(
        "bench/search.py",
        ("--sizes", "10", "--queries", "5", "--build-budget", "0", "--no-peers"),
        (
            r"^\| 10 \| agentgen fields \(default\) \| [\d.,]+ \| [\d,]+ \| [\d,]+ \| [\d.,]+ \| ",
            r"^\| 10 \| agentgen classic \| [\d.,]+ \| [\d,]+ \| [\d,]+ \| 1\.00 \| 1\.00 \|  \|$",
            r"^\| 10 \| [\d,]+ \| [\d,]+ \|$",
        ),
    ),
    Script(
        "bench/search_eval/split.py",
        ("--check",),
        (r"^all: \d+ queries, \d+ distinct expected tools from \d+ toolsets$",),
    ),
    Script(
        "bench/trace_print.py",
        ("--mb", "0.5"),
        (
            r"^0\.5 MB, [\d,]+ messages$",
            r"^\| print, unstyled \(direct\) \| [\d.,]+ \|$",
            r"^unstyled printing: [\d.,]+x less CPU than through rich$",
        ),
    ),
    Script(
        "bench/tracing.py",
        ("--runs", "2", "--rounds", "1", "--warmup", "1"),
        (
            r"^\| off \(baseline\) \| [\d,]+ \| [\d,]+ \| \+0 \| 1\.00 \|$",
            r"^\| SDK, in-memory exporter \| [\d,]+ \| [\d,]+ \| ",
        ),
    ),
]


def test_every_script_is_covered() -> None:
    """A new benchmark gets its smoke run here (vocabulary.py is words, not a script)."""
    scripts = {p.relative_to(ROOT).as_posix() for p in (ROOT / "bench").rglob("*.py")}
    left_out = {"bench/vocabulary.py", "bench/search_eval/collect.py"}
    assert scripts - left_out == {script.path for script in SCRIPTS}


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.path.removeprefix("bench/") for s in SCRIPTS])
def test_the_script_runs_at_its_smallest_size(script: Script) -> None:
    done = subprocess.run(
        [sys.executable, script.path, *script.args],
        check=False,
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{script.path} exited {done.returncode}:\n{done.stderr}"
    lines = done.stdout.splitlines()
    missing = [row for row in script.rows if not any(re.search(row, line) for line in lines)]
    assert not missing, f"{script.path} printed no line matching {missing}:\n{done.stdout}"
