"""The ``agentgen`` command line.

Exit codes: 0 success; 1 the design is invalid or its own code raised; 2 the design file
cannot be used at all (missing, not Python) or the command line is wrong.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from agentgen.codegen import cache

if TYPE_CHECKING:
    from agentgen.codegen.agent_views import AgentView
    from agentgen.dsl.errors import DesignErrors
    from agentgen.dsl.expr import RootExpr

# The design machinery (pydantic, Jinja2...) is imported by the commands that need it: a
# regeneration with nothing to do answers from the cache without loading any of it.

T = TypeVar("T")

EXIT_INVALID = 1
EXIT_UNUSABLE = 2
CONFLICT_HINT = "move those files out of the output folder, or choose another output folder with -o"


def load_or_exit(
    design: Path, inputs: set[str] | None = None, listed: set[str] | None = None
) -> RootExpr:
    """Load ``design``, or print why it cannot be used and exit with the matching code.

    When the design breaks DSL rules, what the generator would check next is checked too
    (types, names that collide), so that one run shows every problem.
    """
    from agentgen.codegen.loader import DesignFileError, UserCodeError, load_design
    from agentgen.dsl.errors import DesignErrors

    try:
        return load_design(design, inputs=inputs, listed=listed)
    except DesignFileError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_UNUSABLE)
    except UserCodeError as exc:
        click.echo(
            f"error: the design raised an exception\n{exc.traceback_text}", err=True, nl=False
        )
        sys.exit(EXIT_INVALID)
    except DesignErrors as exc:
        errors = exc
        if exc.root is not None:
            from agentgen.codegen.build import build_errors

            errors = DesignErrors([*exc.errors, *build_errors(exc.root)])
        report(design, errors)
        sys.exit(EXIT_INVALID)


@contextlib.contextmanager
def batch_memory() -> Iterator[None]:
    """Pause the cyclic garbage collector for one command.

    Loading a large design creates hundreds of thousands of long-lived objects (its pydantic
    models); each full collection walks all of them again, which made generation time grow
    faster than the design. A command is short-lived: it trades some peak memory for time.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def views_or_exit(design: Path, agent_id: str | None) -> list[AgentView]:
    """The design's agents as ``explain`` and ``search`` show them (all, or the one named)."""
    from agentgen.codegen.agent_views import UnknownAgentError, select
    from agentgen.codegen.build import build

    with batch_memory():
        root = load_or_exit(design)
        model = build_or_exit(design, build, root)
    try:
        return select(model, agent_id)
    except UnknownAgentError as exc:
        raise click.UsageError(str(exc)) from None


def report(design: Path, errors: DesignErrors) -> None:
    from agentgen.codegen.diagnostics import format_errors

    color = sys.stderr.isatty() and "NO_COLOR" not in os.environ
    click.echo(format_errors(errors.errors, color=color), err=True)
    count = len(errors.errors)
    click.echo(f"{design}: {count} design error{'s' if count != 1 else ''}", err=True)


def summary(root: RootExpr) -> str:
    def plural(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"

    agents = root.agents()
    tools = sum(len(t.tools) for t in root.toolsets)
    return ", ".join(
        [
            plural(len(root.services), "service"),
            plural(len(agents), "agent"),
            plural(len(root.toolsets), "toolset"),
            plural(tools, "tool"),
            plural(len(root.registries), "registry").replace("registrys", "registries"),
        ]
    )


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="agentgen", prog_name="agentgen")
def main() -> None:
    """agentgen: typed agent packages with deferred tool loading, from a Python design."""


@main.command()
@click.argument("design", type=click.Path(path_type=Path))
def validate(design: Path) -> None:
    """Evaluate DESIGN and check every rule, reporting all errors at once.

    Everything `agentgen gen` would report is checked (types that cannot be generated
    included); nothing is written.

    \b
    Example:
      agentgen validate examples/records/design.py
    """
    from agentgen.codegen.build import build

    with batch_memory():
        root = load_or_exit(design)
        model = build_or_exit(design, build, root)
    for warning in model.warnings:
        click.echo(f"warning: {warning}", err=True)
    click.echo(f"{design}: valid ({summary(root)})")


def build_or_exit(design: Path, build: Callable[[RootExpr], T], root: RootExpr) -> T:
    """Run a generation stage, or print its design errors and exit 1."""
    from agentgen.dsl.errors import DesignErrors

    try:
        return build(root)
    except DesignErrors as exc:
        report(design, exc)
        sys.exit(EXIT_INVALID)


@main.command()
@click.argument("design", type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("gen"),
    show_default=True,
    help="Folder of the generated packages.",
)
@click.option(
    "--check",
    is_flag=True,
    help="Write nothing; exit 1 if OUTPUT is not current, listing missing, stale and extra "
    "files and conflicts (files at generated paths that agentgen did not generate).",
)
@click.option(
    "--no-cache",
    is_flag=True,
    help="Always load and generate, even when nothing the last generation read has changed.",
)
def gen(design: Path, output: Path, check: bool, no_cache: bool) -> None:
    """Generate typed agent packages from DESIGN into OUTPUT.

    Files that are no longer generated are removed (only files carrying agentgen's header).
    A file at a generated path that agentgen did not generate (no generated header) is a
    conflict: gen refuses to overwrite it, lists the conflicts and writes nothing.

    With --check nothing is written: gen exits 1 listing missing, stale and extra files and
    conflicts when OUTPUT is not what DESIGN generates.

    \b
    Examples:
      agentgen gen design.py
      agentgen gen examples/records/design.py -o examples/records/gen
      agentgen gen design.py --check     # in CI: fail when committed packages are stale
    """
    if not check and not no_cache and design.is_file():
        record = cache.unchanged(design, output)
        if record is not None:
            for warning in record.warnings:
                click.echo(f"warning: {warning}", err=True)
            click.echo(f"{output}: 0 created, 0 updated, 0 removed, {len(record.files)} unchanged")
            return
    from agentgen.codegen.output import OutputConflictError, compare, write
    from agentgen.codegen.pipeline import generate

    inputs: set[str] = set()
    listed: set[str] = set()
    with batch_memory():
        root = load_or_exit(design, inputs, listed)
        generation = build_or_exit(design, generate, root)
    for warning in generation.model.warnings:
        click.echo(f"warning: {warning}", err=True)
    if check:
        diff = compare(output, generation.files)
        if diff.clean:
            click.echo(f"{output}: up to date ({len(generation.files)} files)")
            return
        click.echo(f"{output} is not what {design} generates:", err=True)
        for line in diff.lines():
            click.echo(f"  {line}", err=True)
        if diff.conflicts:
            # `agentgen gen` would refuse as well: the conflicts must go first.
            click.echo(CONFLICT_HINT, err=True)
        else:
            click.echo("run `agentgen gen` again and commit the result", err=True)
        sys.exit(EXIT_INVALID)
    try:
        diff = write(output, generation.files)
    except OutputConflictError as exc:
        click.echo(
            f"error: {output}: refusing to overwrite what agentgen did not generate (no "
            "generated header) at generated paths; nothing was written:",
            err=True,
        )
        for path in exc.conflicts:
            click.echo(f"  {output / path}", err=True)
        click.echo(CONFLICT_HINT, err=True)
        sys.exit(EXIT_INVALID)
    cache.save(
        design,
        output,
        inputs,
        ((f.path, f.text) for f in generation.files),
        generation.model.warnings,
        listed,
    )
    changed = len(diff.missing) + len(diff.stale)
    unchanged = len(generation.files) - changed
    click.echo(
        f"{output}: {len(diff.missing)} created, {len(diff.stale)} updated, "
        f"{len(diff.extra)} removed, {unchanged} unchanged"
    )


@main.command()
@click.argument("design", type=click.Path(path_type=Path))
@click.argument("query")
@click.option(
    "--agent",
    "agent_id",
    help="Agent ID (service.agent) or name; needed when the design has several.",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="How many tools a search returns (at least 1).",
)
def search(design: Path, query: str, agent_id: str | None, limit: int) -> None:
    """Rank an agent's deferred tools for QUERY as the OpenAI adapter's tool search does.

    Shows the BM25 ranking (k1 1.2, b 0.75) over the agent's deferred compiled tools that the
    OpenAI Responses adapter's client-side tool search uses, with each tool's score and every
    query word's contribution, so a team can check that its tools are findable before
    shipping. Claude (the Anthropic Messages adapter) uses Anthropic's hosted regex search
    instead, which this ranking does not predict. Registry tools are resolved at run time and
    are not listed.

    \b
    Examples:
      agentgen search examples/records/design.py --agent assistant.assistant "analyze records"
      agentgen search design.py --agent reader "find a customer" --limit 10
    """
    from agentgen.runtime.adapters.names import provider_name
    from agentgen.runtime.search.document import tokenize
    from agentgen.runtime.search.index import SearchEntry, SearchIndex

    views = views_or_exit(design, agent_id)
    if len(views) != 1:
        known = ", ".join(v.agent.id for v in views)
        raise click.UsageError(f"the design has several agents; pick one with --agent ({known})")
    (view,) = views
    deferred = view.deferred
    index = SearchIndex(
        [SearchEntry(t.tool.id, t.tool.search, (provider_name(t.tool.id),)) for t in deferred]
    )
    words = sorted(set(tokenize(query)))
    click.echo(
        f"agent {view.agent.id}: {len(deferred)} deferred tool{'s' if len(deferred) != 1 else ''}"
        f"; query {query!r} → words: {', '.join(words) or '(none)'}"
    )
    if view.registry_reads:
        click.echo("  (registry sources are resolved at run time and are not searched here)")
    hits = index.explain(query, limit)
    if not hits:
        click.echo(
            "  no tool matches (a deferred tool is found only by the words of its ID, "
            "title and description)"
        )
        return
    width = max(len(h.tool_id) for h in hits)
    for rank, hit in enumerate(hits, start=1):
        terms = ", ".join(
            f"{t.term} {t.contribution:.3f} (tf {t.tf}, idf {t.idf:.3f})" for t in hit.terms
        )
        exact = "exact name; " if hit.exact_name else ""
        click.echo(f"  {rank}. {hit.tool_id:<{width}}  score {hit.score:.3f}  [{exact}{terms}]")


@main.command()
@click.argument("design", type=click.Path(path_type=Path))
@click.option(
    "--agent",
    "agent_id",
    help="Agent ID (service.agent) or name; every agent of the design when left out.",
)
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def explain(design: Path, agent_id: str | None, as_json: bool) -> None:
    """Show what each agent of DESIGN loads up front and what it finds by search.

    For every agent: each compiled tool with its source (local, agent, mcp), whether it is
    immediate or deferred, its tags and its toolset's schema fingerprint; the registry sources
    it reads (their tools are resolved at run time); and the size of the first model request
    for OpenAI Responses and Anthropic Messages, in bytes and o200k tokens, as designed and with
    every tool eager. The requests are built by the real adapters and captured in memory:
    nothing is sent. Sizes need the provider SDKs (pip install 'agentgen[openai,anthropic]'),
    token counts need pip install 'agentgen[tokens]'; without them the other columns still
    print.

    \b
    Examples:
      agentgen explain examples/records/design.py
      agentgen explain design.py --agent assistant.assistant
      agentgen explain design.py --json | jq '.agents[].first_request.openai'
    """
    import json

    from agentgen.codegen.explain import explain as explain_agents
    from agentgen.codegen.explain import render_json, render_text

    views = views_or_exit(design, agent_id)
    explanations = explain_agents(views)
    if as_json:
        click.echo(json.dumps(render_json(str(design), explanations), indent=2))
    else:
        click.echo(render_text(explanations) or f"{design}: the design has no agents")


def run() -> None:
    """The ``agentgen`` console script.

    A command is one short process: the cyclic garbage collector is paused for all of it (a
    large design's hundreds of thousands of long-lived objects made every full collection
    slower), and the process ends without tearing those objects down one by one.
    """
    gc.disable()
    try:
        main()
    except SystemExit as exc:
        code = exc.code
        status = code if isinstance(code, int) else (0 if code is None else 1)
        if not isinstance(code, int | None):
            click.echo(code, err=True)
    else:  # pragma: no cover - click always exits in standalone mode
        status = 0
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


if __name__ == "__main__":  # pragma: no cover
    run()
