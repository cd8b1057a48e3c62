"""The distributed company example runs as documented (``python -m examples.company``, what
``make demo-registry`` runs): registry, provider and agent in separate processes, offline."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.registry.conftest import ROOT, _env


def test_the_company_example_runs_end_to_end() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "examples.company"],
        check=False,
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    # The agent found the provider's tool by deferred search and called it through the registry.
    assert 'search   "find colleague team office"' in out
    assert "loaded   directory.find_person" in out
    assert '"office":"London"' in out and '"office":"Zurich"' in out
    first = re.search(r"accepted directory\.find_person: .* version 2026\.1, admission (\w+)", out)
    second = re.search(r"accepted directory\.find_person: .* version 2026\.2, admission (\w+)", out)
    assert first and second and first.group(1) != second.group(1)
    # Revision 2026.2 replaced 2026.1 while the agent kept running...
    assert out.index("got SIGTERM: drained and left") < out.index("revision 2026.2 admitted")
    assert out.index("revision 2026.2 admitted") < out.index("Has anything changed")
    # ...and the call accepted under 2026.1 kept its contract and admission.
    kept = re.search(r"kept .* version 2026\.1, admission (\w+)", out)
    assert kept and kept.group(1) == first.group(1)
