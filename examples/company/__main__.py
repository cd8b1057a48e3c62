"""The distributed company example: a registry, a provider process and an agent that finds the
provider's tool by deferred search. Runs offline, from a fresh clone::

    make demo-registry            # or: .venv/bin/python -m examples.company

What happens, each part in its own process:

1. ``agentgen registry serve`` starts the registry (an SQLite file in a temporary folder).
2. ``python -m examples.company.provider --revision 2026.1`` publishes toolset
   ``hr.directory`` (the design's ``PublishTo(Company)``) and serves its calls.
3. The generalist agent (it consumes the whole company registry, deferred) is wired with the
   generated one-liner ``registry_tools.connect(rt)`` and asked about a colleague: the model
   searches, loads ``directory.find_person``, calls it; the registry routes the call to the
   provider under the admission the planning activity resolved.
4. Revision 2026.2 of the provider replaces the first one (SIGTERM: the first drains and
   leaves; the second is admitted), without restarting the agent. The next planning activity
   reads the registry again and sees the new catalog, while the call accepted earlier keeps
   the contract and admission it was accepted under (its checkpoint restores revision 2026.1).

The model's replies are recorded (``recordings/openai.json``) and replayed through the real
OpenAI adapter and SDK, as in the quickstart: no credentials, no network beyond 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from agentgen.runtime import (
    AcceptedCall,
    Message,
    ModelPlanner,
    RunOutcome,
    Runtime,
)
from agentgen.runtime.testing import RecordedProvider, Recording, RecordingError
from agentgen.runtime.trace import print_trace
from examples.company.gen.assistant.agents import generalist
from examples.company.gen.assistant.agents.generalist import registry_tools
from examples.quickstart.tool_search import FirstRequest

ROOT = Path(__file__).resolve().parents[2]
RECORDING = Path(__file__).resolve().parent / "recordings" / "openai.json"
SYSTEM = (
    "You are a concise assistant for the company's employees. More tools than the ones you "
    "see can be found with tool search; use them rather than guessing."
)
QUESTIONS = (
    "Which team is Ada Lovelace on, and where does she sit?",
    "Has anything changed for Ada since?",
)
REVISIONS = ("2026.1", "2026.2")


class DemoError(Exception):
    """A part of the demo failed; the message says which."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    return env


@dataclass
class Processes:
    """The registry and provider processes the demo started (stopped on the way out)."""

    running: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self, *args: str) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            [sys.executable, *args],
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.running.append(process)
        return process

    def stop_all(self) -> None:
        for process in self.running:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


@contextlib.contextmanager
def processes() -> Iterator[Processes]:
    started = Processes()
    try:
        yield started
    finally:
        started.stop_all()


def start_registry(started: Processes, store: str, port: int) -> str:
    process = started.start(
        "-m", "agentgen.codegen.cli", "registry", "serve", "--store", store, "--port", str(port)
    )
    url = f"http://127.0.0.1:{port}"
    import httpx2

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise DemoError(f"the registry exited: {_stderr(process)}")
        with contextlib.suppress(httpx2.TransportError):
            if httpx2.get(f"{url}/health", timeout=0.5).status_code == 200:
                return url
        time.sleep(0.05)
    raise DemoError("the registry did not answer /health within 30 s")


def start_provider(
    started: Processes, url: str, revision: str
) -> tuple[subprocess.Popen[bytes], str]:
    process = started.start("-m", "examples.company.provider", "--url", url, "--revision", revision)
    assert process.stdout is not None
    line = process.stdout.readline().decode()
    if not line.startswith("registered "):
        raise DemoError(f"provider {revision} did not register: {_stderr(process)}")
    return process, line.split()[1]


def stop_provider(process: subprocess.Popen[bytes]) -> str:
    """SIGTERM: the provider drains (finishes what it holds, takes nothing new) and leaves."""
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=60)
    return out.decode().strip()


def _stderr(process: subprocess.Popen[bytes]) -> str:
    if process.poll() is None:
        process.kill()
    err = process.stderr.read().decode() if process.stderr else ""
    return err.strip()[-2000:] or f"exit status {process.returncode}"


def _short(token: str) -> str:
    return token[:12]


def describe(accepted: AcceptedCall) -> str:
    binding = accepted.binding
    assert binding is not None
    return (
        f"{accepted.spec.id}: {binding.registry} toolset {binding.toolset} version "
        f"{binding.version}, admission {_short(binding.registration_token)}"
    )


@dataclass(frozen=True)
class DemoResult:
    answers: tuple[str, ...]
    first: AcceptedCall
    second: AcceptedCall
    tokens: tuple[str, ...]
    restored: AcceptedCall


async def converse(
    url: str, out: TextIO, on_turn_done: object
) -> tuple[list[RunOutcome], RecordedProvider]:
    recording = Recording.load(RECORDING, "openai")
    recorded = recording.player()
    # Keeps each turn's first request: its catalog, which the registry changes between turns.
    first = FirstRequest(recorded.model())
    rt = Runtime()
    rt.register_model("openai", first)
    # The generated one-liner: the design's Registry settings, here at the demo's address.
    registry_tools.connect(rt, urls={"company": url})
    generalist.register_generalist_agent(
        rt,
        generalist.GeneralistAgentConfig(
            planner=ModelPlanner("openai", model=recording.model, system=SYSTEM, max_tokens=1024)
        ),
    )
    client = generalist.new_client(rt)
    outcomes: list[RunOutcome] = []
    history: list[Message] = []
    for number, question in enumerate(QUESTIONS):
        first.tools = None
        outcome = await client.run([*history, Message.user(question)], run_id=f"demo-{number}")
        outcomes.append(outcome)
        # The turn's own messages, as the quickstart prints a run (agentgen.runtime.trace).
        print_trace(outcome.transcript[len(history) :], file=out, tools=first.tools)
        history = list(outcome.transcript)
        await on_turn_done(number, outcome)  # type: ignore[operator]
    registration = rt.registry("company")
    await registration.client.aclose()
    return outcomes, recorded


def run_demo(out: TextIO, *, workdir: Path) -> DemoResult:
    """Start everything, talk to the agent twice with a provider switch in between."""
    with processes() as started:
        port = free_port()
        store = f"sqlite:{workdir / 'registry.db'}"
        url = start_registry(started, store, port)
        print(f"registry {url} (agentgen registry serve --store {store})", file=out)
        provider, first_token = start_provider(started, url, REVISIONS[0])
        print(
            f"provider hr.directory revision {REVISIONS[0]} admitted "
            f"({_short(first_token)}), serving from process {provider.pid}",
            file=out,
        )
        tokens = [first_token]

        async def between_turns(number: int, outcome: RunOutcome) -> None:
            for accepted in outcome.accepted_calls:
                print(f"accepted {describe(accepted)}", file=out)
            if number > 0:
                return
            nonlocal provider
            print(file=out)
            # The new revision starts first: it is told to wait while revision 2026.1 holds
            # a live lease, and is admitted as soon as the old one has drained and left.
            replacement = await asyncio.to_thread(
                _replace, started, url, provider, REVISIONS[1], out
            )
            provider, token = replacement
            tokens.append(token)
            print(file=out)

        outcomes, recorded = asyncio.run(converse(url, out, between_turns))
        stop_provider(provider)
        print(f"provider revision {REVISIONS[1]} got SIGTERM: drained and left", file=out)
    recorded.assert_finished()  # the run used exactly the recorded conversation
    first = outcomes[0].accepted_calls[0]
    second = outcomes[1].accepted_calls[0]
    checkpoint = json.loads(json.dumps(first.to_json()))
    restored = AcceptedCall.from_json(checkpoint, lambda tool_id: None)
    print(
        f"kept     the first call's checkpoint restores {describe(restored)} -- its own "
        "contract and admission, not the registry's current one",
        file=out,
    )
    return DemoResult(tuple(o.final_text for o in outcomes), first, second, tuple(tokens), restored)


def _replace(
    started: Processes,
    url: str,
    old: subprocess.Popen[bytes],
    revision: str,
    out: TextIO,
) -> tuple[subprocess.Popen[bytes], str]:
    stopping = old
    new_process: list[tuple[subprocess.Popen[bytes], str]] = []

    def admit() -> None:
        new_process.append(start_provider(started, url, revision))

    import threading

    waiter = threading.Thread(target=admit)
    waiter.start()
    summary = stop_provider(stopping).split()
    print(
        f"provider revision {REVISIONS[0]} got SIGTERM: drained and left "
        f"({summary[-1] if summary else '?'} call(s) completed)",
        file=out,
    )
    waiter.join(60)
    if not new_process:
        raise DemoError(f"provider revision {revision} was not admitted")
    process, token = new_process[0]
    print(
        f"provider hr.directory revision {revision} admitted ({_short(token)}), serving from "
        f"process {process.pid}; the agent keeps running",
        file=out,
    )
    return process, token


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m examples.company",
        description="Run the registry, a provider and the generalist agent (offline model).",
    )
    parser.parse_args(argv)
    out = out or sys.stdout
    print("agentgen company example: registry, provider and agent in separate processes", file=out)
    print("(offline, no credentials: replaying examples/company/recordings/openai.json)", file=out)
    print(file=out)
    try:
        with tempfile.TemporaryDirectory(prefix="agentgen-company-") as folder:
            run_demo(out, workdir=Path(folder))
    except (DemoError, RecordingError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
