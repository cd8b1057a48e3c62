"""Every ``agentgen`` command's help reads the same way: each option says what it does, each
command shows examples, and a default is shown where the option has one."""

from __future__ import annotations

from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner

from agentgen.codegen.cli import main


def commands(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))
        else:
            yield (*path, name)


def command_of(path: tuple[str, ...]) -> click.Command:
    command: click.Command = main
    for name in path:
        assert isinstance(command, click.Group)
        found = command.get_command(click.Context(command), name)
        assert found is not None
        command = found
    return command


LEAVES = list(commands(main))


def test_every_command_is_found() -> None:
    assert {" ".join(path) for path in LEAVES} >= {
        "validate", "gen", "explain", "search", "registry serve", "trace", "worker", "eval-search",
    }  # fmt: skip


@pytest.mark.parametrize("path", LEAVES, ids=" ".join)
def test_help_has_examples_and_explains_every_option(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(main, [*path, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "Example:" in result.stdout or "Examples:" in result.stdout
    assert f"agentgen {' '.join(path)}" in result.stdout.split("Example", 1)[1]
    command = command_of(path)
    for option in command.params:
        if isinstance(option, click.Option):
            assert option.help, f"agentgen {' '.join(path)} {option.opts[0]} has no help text"
            default = option.get_default(click.Context(command), call=False)
            if isinstance(default, str | int | float) and not option.is_flag:
                shown = option.show_default or "default" in option.help
                assert shown, f"agentgen {' '.join(path)} {option.opts[0]} hides its default"
