"""Commands writing to a standard output whose encoding cannot hold what they print."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from agentgen.codegen.cli import main
from agentgen.runtime.messages import Message, TextPart
from agentgen.runtime.transcript import dumps

RECORDS = str(Path(__file__).resolve().parents[2] / "examples/records/design.py")


def test_search_on_a_cp1252_output_prints_escapes_not_a_bug() -> None:
    # The header's arrow is not in cp1252 (a Windows console, PYTHONIOENCODING=cp1252): the
    # command ended as "a bug in agentgen" (exit 3).
    runner = CliRunner(charset="cp1252")
    result = runner.invoke(main, ["search", RECORDS, "--agent", "assistant.assistant", "analyze"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == (
        "agent assistant.assistant: 2 deferred tools; query 'analyze' \\u2192 words: analyz"
    )


def test_trace_on_an_ascii_output_prints_escapes_not_a_bug(tmp_path: Path) -> None:
    stored = tmp_path / "transcript.json"
    stored.write_text(
        dumps(
            [
                Message("user", (TextPart("Quel temps à Tōkyō ?"),)),
                Message("assistant", (TextPart("Ensoleillé → 24°C"),)),
            ]
        ),
        encoding="utf-8",
    )
    result = CliRunner(charset="ascii").invoke(main, ["trace", str(stored)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "user     Quel temps \\xe0 T\\u014dky\\u014d ?",
        "answer   Ensoleill\\xe9 \\u2192 24\\xb0C",
    ]
