"""``agentgen trace`` on transcripts that hold no run."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from agentgen.codegen.cli import main


def test_an_empty_transcript_is_reported_not_printed_as_nothing(tmp_path: Path) -> None:
    """``[]`` is valid JSON but no run: exit 0 with no output read as "nothing to show"."""
    path = tmp_path / "transcript.json"
    path.write_text("[]\n", encoding="utf-8")
    runner = CliRunner()
    for args, stdin, name in (([str(path)], None, str(path)), (["-"], "[]", "<stdin>")):
        result = runner.invoke(main, ["trace", *args], input=stdin)
        # Exit 2, as for an empty file: the transcript given is not a run to trace.
        assert result.exit_code == 2, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert result.stdout == ""
        assert f"error: {name}: holds no messages (an empty JSON list); " in result.stderr
        assert "agentgen.runtime.transcript.dumps(outcome.transcript)" in result.stderr
