"""A registry and a provider in the test process, reached over HTTP on 127.0.0.1 from worker
processes: what the crash test kills workers around.

The server keeps the admissions (declaration and registration token per toolset), admits calls
against the exact current token, runs each admitted call once in the provider (which counts
its executions and holds each one until the test releases it), and keeps every result for
whoever waits for it, however often: a call is never executed twice, a result never lost.
``/charge`` is a plain provider endpoint for compiled tools (counted and held the same way).

:class:`HttpRegistry` is the client worker processes use (the runtime's ``RegistryClient`` and
``ResultStream`` protocols over ``urllib``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agentgen.runtime.contracts.declarations import ToolsetDeclaration
from agentgen.runtime.contracts.fingerprint import registration_token
from agentgen.runtime.contracts.wire import fingerprint
from agentgen.runtime.registry.client import (
    CallOutcome,
    CallRef,
    RegistryError,
    ResolvedToolset,
    ToolCallMeta,
)


@dataclass
class Provider:
    """What the provider did: every execution, held until released."""

    executions: list[dict[str, Any]] = field(default_factory=list)
    started: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def execute(self, what: dict[str, Any]) -> None:
        with self.lock:
            self.executions.append(what)
        self.started.set()
        self.release.wait(timeout=120)


class RegistryServer:
    def __init__(self) -> None:
        self.provider = Provider()
        self.admissions: dict[str, tuple[dict[str, Any], str]] = {}
        self.calls: list[tuple[str, str, str]] = []
        self.results: dict[str, CallOutcome] = {}
        self.done = threading.Condition()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                try:
                    status, answer = 200, server.handle(self.path, body)
                except RegistryError as exc:
                    status, answer = 409, {"code": exc.code, "message": exc.message}
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                with contextlib.suppress(OSError):  # the worker that asked was killed meanwhile
                    self.wfile.write(data)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.http.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> RegistryServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.provider.release.set()
        self.http.shutdown()
        self.http.server_close()

    def publish(self, declaration: ToolsetDeclaration, revision: str) -> str:
        token = registration_token(fingerprint(declaration), revision)
        self.admissions[declaration.name] = (declaration.to_json(), token)
        return token

    def handle(self, path: str, body: dict[str, Any]) -> Any:
        if path == "/list":
            return sorted(self.admissions)
        if path == "/resolve":
            if body["name"] not in self.admissions:
                raise RegistryError("not_found", f"toolset {body['name']!r} not found")
            declaration, token = self.admissions[body["name"]]
            return {"toolset": declaration, "token": token}
        if path == "/call":
            return self._call(body)
        if path == "/retry":
            return body["ref"]
        if path == "/await":
            with self.done:
                self.done.wait_for(lambda: body["use_id"] in self.results, timeout=120)
                outcome = self.results[body["use_id"]]
            return {"status": outcome.status, "payload_json": outcome.payload_json}
        if path == "/charge":
            self.provider.execute({"tool": "charge", **body})
            return {"charged": body["amount"]}
        raise RegistryError("not_found", f"no endpoint {path}")

    def _call(self, body: dict[str, Any]) -> dict[str, str]:
        admission = self.admissions.get(body["toolset"])
        if admission is None:
            raise RegistryError("not_found", f"toolset {body['toolset']!r} not found")
        if admission[1] != body["token"]:
            raise RegistryError("call_not_admitted", "the admission was replaced")
        meta = body["meta"]
        use_id = hashlib.sha256(f"{meta['run_id']}\0{meta['tool_call_id']}".encode()).hexdigest()
        ref = {"tool_use_id": use_id, "registration_token": body["token"]}
        with self.done:
            if any(u == use_id for _, _, u in self.calls):
                return ref  # admitted already: never executed twice
            self.calls.append((body["tool"], body["token"], use_id))
        payload = json.loads(body["payload_json"])

        def run() -> None:
            self.provider.execute({"tool": body["tool"], **payload})
            with self.done:
                value = {"charged": payload["amount"]}
                self.results[use_id] = CallOutcome("completed", json.dumps(value))
                self.done.notify_all()

        threading.Thread(target=run, daemon=True).start()
        return ref


class HttpRegistry:
    """The runtime's registry client and result stream, over the server's HTTP API."""

    def __init__(self, url: str) -> None:
        self.url = url

    def _post(self, path: str, body: dict[str, Any], timeout: float = 130) -> Any:
        request = urllib.request.Request(
            self.url + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as reply:
                return json.loads(reply.read())
        except urllib.error.HTTPError as exc:
            error = json.loads(exc.read())
            raise RegistryError(error["code"], error["message"]) from None

    async def post(self, path: str, body: dict[str, Any]) -> Any:
        return await asyncio.to_thread(self._post, path, body)

    async def list_toolsets(self) -> list[str]:
        names: list[str] = await self.post("/list", {})
        return names

    async def resolve_toolset(self, name: str) -> ResolvedToolset:
        reply = await self.post("/resolve", {"name": name})
        return ResolvedToolset(ToolsetDeclaration.model_validate(reply["toolset"]), reply["token"])

    async def call_resolved_tool(
        self,
        *,
        toolset: str,
        tool: str,
        payload_json: str,
        meta: ToolCallMeta,
        expected_registration_token: str,
    ) -> CallRef:
        reply = await self.post(
            "/call",
            {
                "toolset": toolset,
                "tool": tool,
                "payload_json": payload_json,
                "meta": {"run_id": meta.run_id, "tool_call_id": meta.tool_call_id},
                "token": expected_registration_token,
            },
        )
        return CallRef(reply["tool_use_id"], reply["registration_token"])

    async def retry_tool(self, ref: CallRef, *, expected_registration_token: str) -> CallRef:
        return ref

    async def await_result(self, ref: CallRef) -> CallOutcome:
        reply = await self.post("/await", {"use_id": ref.tool_use_id})
        return CallOutcome(reply["status"], reply["payload_json"])

    async def charge(self, amount: int) -> dict[str, Any]:
        """The provider endpoint a compiled tool calls."""
        reply: dict[str, Any] = await self.post("/charge", {"amount": amount})
        return reply
