"""The ``agentgen`` command line.

Exit codes: 0 success; 1 the design is invalid or its own code raised; 2 the design file
cannot be used at all (missing, not Python) or the command line is wrong.
"""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import click

from agentgen.codegen.loader import DesignFileError, UserCodeError, load_design
from agentgen.codegen.output import compare, write
from agentgen.codegen.pipeline import generate
from agentgen.dsl.errors import DesignErrors
from agentgen.dsl.expr import RootExpr

EXIT_INVALID = 1
EXIT_UNUSABLE = 2


def _version() -> str:
    try:
        return version("agentgen")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "unknown"


def load_or_exit(design: Path) -> RootExpr:
    """Load ``design``, or print why it cannot be used and exit with the matching code."""
    try:
        return load_design(design)
    except DesignFileError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_UNUSABLE)
    except UserCodeError as exc:
        click.echo(
            f"error: the design raised an exception\n{exc.traceback_text}", err=True, nl=False
        )
        sys.exit(EXIT_INVALID)
    except DesignErrors as exc:
        click.echo(exc.format(), err=True)
        count = len(exc.errors)
        click.echo(f"{design}: {count} design error{'s' if count != 1 else ''}", err=True)
        sys.exit(EXIT_INVALID)


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
@click.version_option(_version(), prog_name="agentgen")
def main() -> None:
    """agentgen: typed agent packages with deferred tool loading, from a Python design."""


@main.command()
@click.argument("design", type=click.Path(path_type=Path))
def validate(design: Path) -> None:
    """Evaluate DESIGN and check every rule, reporting all errors at once.

    \b
    Example:
      agentgen validate examples/records/design.py
    """
    root = load_or_exit(design)
    click.echo(f"{design}: valid ({summary(root)})")


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
    help="Write nothing; exit 1 listing missing, stale and extra files if OUTPUT is not current.",
)
def gen(design: Path, output: Path, check: bool) -> None:
    """Generate typed agent packages from DESIGN into OUTPUT.

    Files that are no longer generated are removed (only files carrying agentgen's header).

    \b
    Examples:
      agentgen gen design.py
      agentgen gen examples/records/design.py -o examples/records/gen
      agentgen gen design.py --check     # in CI: fail when committed packages are stale
    """
    root = load_or_exit(design)
    try:
        generation = generate(root)
    except DesignErrors as exc:
        click.echo(exc.format(), err=True)
        count = len(exc.errors)
        click.echo(f"{design}: {count} design error{'s' if count != 1 else ''}", err=True)
        sys.exit(EXIT_INVALID)
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
        click.echo("run `agentgen gen` again and commit the result", err=True)
        sys.exit(EXIT_INVALID)
    diff = write(output, generation.files)
    changed = len(diff.missing) + len(diff.stale)
    unchanged = len(generation.files) - changed
    click.echo(
        f"{output}: {len(diff.missing)} created, {len(diff.stale)} updated, "
        f"{len(diff.extra)} removed, {unchanged} unchanged"
    )


if __name__ == "__main__":  # pragma: no cover
    main()
