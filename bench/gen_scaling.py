"""How `agentgen gen` scales with the number of tools.

For designs of 10, 100, 1,000 and 5,000 tools (10 tools per toolset, each tool with its own
Args and Return models, agents using the toolsets with half of them deferred), runs
`agentgen gen` in a fresh process and reports the median wall time and the peak memory of a
full generation and of a no-change regeneration.

    python bench/gen_scaling.py [--sizes 10,100,1000,5000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

TOOLS_PER_TOOLSET = 10
AGENTGEN = str(Path(sys.executable).with_name("agentgen"))

# Runs the real ``agentgen`` console script once and reports its wall time (interpreter start
# and exit included) and its peak memory: the only child of this small process.
CHILD = textwrap.dedent(
    """
    import resource, subprocess, sys, time
    start = time.perf_counter()
    done = subprocess.run([sys.argv[1], "gen", sys.argv[2], "-o", sys.argv[3]])
    elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print("BENCH", elapsed, peak, file=sys.stderr)
    sys.exit(done.returncode)
    """
)


def design_source(tools: int) -> str:
    lines = [
        "from pydantic import BaseModel, Field",
        "from agentgen.dsl import Agent, Args, Deferred, Return, Service, Tool, Toolset, Use",
        "",
    ]
    toolsets = max(1, tools // TOOLS_PER_TOOLSET)
    for t in range(toolsets):
        for i in range(min(TOOLS_PER_TOOLSET, tools)):
            lines += [
                f"class Args{t}_{i}(BaseModel):",
                f"    query: str = Field(description='What to look up in area {t}.')",
                "    limit: int = Field(default=10, ge=1, le=100)",
                "    tags: list[str] = []",
                f"class Result{t}_{i}(BaseModel):",
                "    ids: list[str]",
                "    total: int",
                "    note: str | None = None",
            ]
        lines.append(f"def toolset_{t}() -> None:")
        for i in range(min(TOOLS_PER_TOOLSET, tools)):
            lines.append(
                f"    Tool('op_{i}', 'Operation {i} of area {t}: finds and summarises records "
                f"about topic {t * 31 + i}.', lambda: (Args(Args{t}_{i}), Return(Result{t}_{i})))"
            )
        lines.append(f"T{t} = Toolset('area_{t}', toolset_{t})")
    lines.append("with Service('bench'):")
    per_agent = 10
    for a in range(0, toolsets, per_agent):
        uses = ", ".join(
            f"Use(T{t}, Deferred)" if t % 2 else f"Use(T{t})"
            for t in range(a, min(a + per_agent, toolsets))
        )
        lines.append(f"    Agent('agent_{a}', 'Agent {a}.', lambda: ({uses},))")
    return "\n".join(lines) + "\n"


def run(design: Path, out: Path) -> tuple[float, float]:
    # Python's bytecode cache on, as in a normal installation (some sandboxes turn it off,
    # which makes every process compile agentgen and its dependencies again).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, AGENTGEN, str(design), str(out)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if done.returncode != 0:
        raise SystemExit(f"agentgen gen failed:\n{done.stderr}")
    line = next(ln for ln in done.stderr.splitlines() if ln.startswith("BENCH"))
    _, elapsed, peak = line.split()
    return float(elapsed), float(peak)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10,100,1000,5000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="agentgen-bench-") as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            design = Path(tmp) / f"design_{size}.py"
            design.write_text(design_source(size))
            full, regen = [], []
            files = 0
            for _ in range(args.repeat):
                out = Path(tmp) / f"gen_{size}"
                shutil.rmtree(out, ignore_errors=True)
                full.append(run(design, out))
                regen.append(run(design, out))
                files = sum(1 for _ in out.rglob("*") if _.is_file())
            results.append(
                {
                    "tools": size,
                    "files": files,
                    "gen_s": statistics.median(r[0] for r in full),
                    "gen_peak_mib": statistics.median(r[1] for r in full),
                    "regen_s": statistics.median(r[0] for r in regen),
                    "regen_peak_mib": statistics.median(r[1] for r in regen),
                }
            )
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print("| tools | files | gen (s) | gen peak (MiB) | no-change regen (s) | regen peak (MiB) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(
            f"| {r['tools']:,} | {r['files']:,} | {r['gen_s']:.2f} | {r['gen_peak_mib']:.0f} "
            f"| {r['regen_s']:.2f} | {r['regen_peak_mib']:.0f} |"
        )


if __name__ == "__main__":
    main()
