"""Bad input at the HTTP boundary, and access control: 4xx with a machine-readable code, never
a 5xx, and the store unchanged afterwards."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from agentgen.runtime.contracts.declarations import ToolsetDeclaration
from agentgen.runtime.contracts.fingerprint import schema_fingerprint
from agentgen.runtime.registry.auth import AuthConfigError, TokenTable, is_loopback
from agentgen.runtime.registry.client import RegistryError
from agentgen.runtime.registry.http_client import HttpRegistryClient, RetryPolicy
from agentgen.runtime.registry.service import ServiceConfig
from agentgen.runtime.registry.sqlite_store import SQLiteStore
from tests.registry.conftest import Running, free_port, running_registry
from tests.registry.helpers import echo_toolset, register_body

PROVIDER = "provider-token-echo-0001"
OTHER_PROVIDER = "provider-token-other-0002"
CONSUMER = "consumer-token-0000003"
ADMIN = "admin-token-000000000004"
TOKENS = {
    "tokens": [
        {"name": "echo-provider", "role": "provider", "toolsets": ["echo"], "token": PROVIDER},
        {"name": "other-provider", "role": "provider", "toolsets": ["other"],
         "token": OTHER_PROVIDER},
        {"name": "assistant", "role": "consumer", "token": CONSUMER},
        {"name": "ops", "role": "admin", "sha256": __import__("hashlib").sha256(
            ADMIN.encode()).hexdigest()},
    ]
}  # fmt: skip
LIMIT = 64 * 1024


@pytest.fixture
async def secured(tmp_path: Path) -> AsyncIterator[Running]:
    store = SQLiteStore(str(tmp_path / "r.db"))
    async with running_registry(
        store,
        tokens=TokenTable.from_json(TOKENS, "test"),
        config=ServiceConfig(max_body_bytes=LIMIT),
    ) as running:
        yield running


async def post(
    running: Running, path: str, body: Any, token: str | None = None, **headers: str
) -> httpx2.Response:
    sent = {"content-type": "application/json", **headers}
    if token:
        sent["authorization"] = f"Bearer {token}"
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with httpx2.AsyncClient(base_url=running.url, timeout=10) as http:
        return await http.post(path, content=content, headers=sent)


def code_of(response: httpx2.Response) -> str:
    data = response.json()
    assert set(data) == {"error"} and set(data["error"]) == {"code", "message"}, data
    code: str = data["error"]["code"]
    return code


async def catalog(running: Running) -> list[str]:
    response = await post(running, "/v1/toolsets/list", {}, CONSUMER)
    assert response.status_code == 200
    names: list[str] = response.json()["toolsets"]
    return names


@pytest.mark.parametrize(
    ("path", "body", "headers", "status", "code"),
    [
        ("/v1/providers/register", b'{"toolset": ', {}, 400, "malformed_json"),
        ("/v1/providers/register", b"\xff\xfe", {}, 400, "malformed_json"),
        ("/v1/providers/register", b"x" * (LIMIT + 1), {}, 413, "body_too_large"),
        ("/v1/providers/register", b"{}", {"content-type": "text/plain"}, 415,
         "unsupported_media_type"),
        ("/v1/providers/register", register_body(lease_ms="long"), {}, 422, "validation_error"),
        ("/v1/providers/register", register_body(extra=1), {}, 422, "validation_error"),
        ("/v1/providers/register", register_body(schema_fingerprint="xyz"), {}, 422,
         "validation_error"),
        ("/v1/providers/register", [1, 2], {}, 422, "validation_error"),
        ("/v1/providers/register",
         register_body(toolset=echo_toolset(payload={"type": 12}).to_json()), {}, 422,
         "validation_error"),
        ("/v1/providers/register", register_body(wire_protocol_version=7), {}, 422,
         "validation_error"),
    ],
)  # fmt: skip
async def test_bad_registrations_are_refused_with_a_code(
    secured: Running, path: str, body: Any, headers: dict[str, str], status: int, code: str
) -> None:
    response = await post(secured, path, body, PROVIDER, **headers)
    assert (response.status_code, code_of(response)) == (status, code)
    assert await catalog(secured) == []  # nothing was written


async def test_a_declared_number_that_reads_as_zero_is_refused_naming_where(
    secured: Running,
) -> None:
    # JSON lets a provider (written in any language) declare "minimum": 1e-400; read as a
    # double it is 0.0, and the registry stored, fingerprinted and advertised 0 unseen.
    positive = {"type": "object", "properties": {"n": {"type": "number", "minimum": 0.0}}}
    body = json.dumps(registered(echo_toolset(payload=positive)))
    assert body.count('"minimum": 0.0') == 2  # payload and execution payload schemas
    tiny = body.replace('"minimum": 0.0', '"minimum": 1e-400').encode()
    response = await post(secured, "/v1/providers/register", tiny, PROVIDER)
    assert (response.status_code, code_of(response)) == (422, "validation_error")
    assert response.json()["error"]["message"] == (
        "toolset.tools.0.payload_schema.properties.n.minimum: the number 1e-400 is not 0 but "
        "reads as 0 (declarations are read as doubles, and none is this close to zero): write "
        "0 if 0 is meant"
    )
    assert await catalog(secured) == []
    # The smallest double, and text that only looks like such a number, are admitted.
    smallest = {"type": "object", "properties": {"n": {"type": "number", "minimum": 5e-324}}}
    toolset = echo_toolset(description="Say 1e-400 back.", payload=smallest)
    response = await post(secured, "/v1/providers/register", registered(toolset), PROVIDER)
    assert response.status_code == 200, response.text
    assert await catalog(secured) == ["echo"]


def registered(toolset: ToolsetDeclaration) -> dict[str, Any]:
    return register_body(toolset=toolset.to_json(), schema_fingerprint=schema_fingerprint(toolset))


async def test_body_limit_is_enforced_without_a_content_length(secured: Running) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(3):
            yield b" " * (LIMIT // 2)

    async with httpx2.AsyncClient(base_url=secured.url) as http:
        response = await http.post(
            "/v1/toolsets/list",
            content=chunks(),
            headers={"content-type": "application/json", "authorization": f"Bearer {CONSUMER}"},
        )
    assert (response.status_code, code_of(response)) == (413, "body_too_large")


@pytest.mark.parametrize(
    ("method", "path", "status", "code", "allow"),
    [
        ("POST", "/v1/nope", 404, "unknown_route", None),
        ("POST", "/v1/v1/toolsets/list", 404, "unknown_route", None),  # URL given with /v1
        ("GET", "/v1/toolsets/list", 405, "method_not_allowed", "POST"),
        ("DELETE", "/health", 405, "method_not_allowed", "GET"),
        # FastAPI's API browsers load their scripts from a CDN: not served (openapi.json is).
        ("GET", "/docs", 404, "unknown_route", None),
        ("GET", "/redoc", 404, "unknown_route", None),
    ],
)
async def test_unknown_routes_and_methods_answer_the_error_body(
    secured: Running, method: str, path: str, status: int, code: str, allow: str | None
) -> None:
    async with httpx2.AsyncClient(base_url=secured.url, timeout=10) as http:
        response = await http.request(
            method, path, content=b"{}", headers={"content-type": "application/json"}
        )
    assert (response.status_code, code_of(response)) == (status, code)
    assert response.headers.get("allow") == allow
    assert f"{method} {path}: " in response.json()["error"]["message"]


async def test_a_client_at_a_wrong_url_gets_the_registrys_code(secured: Running) -> None:
    async with HttpRegistryClient(f"{secured.url}/v1", token=CONSUMER) as client:
        with pytest.raises(RegistryError) as info:
            await client.list_toolsets()
    assert info.value.code == "unknown_route"
    assert "/v1/v1/toolsets/list" in info.value.message


@pytest.mark.parametrize(
    "body", [{"query": ""}, {"query": "x" * 257}, {}, {"query": 5}, {"query": "a", "tag": []}]
)
async def test_a_search_needs_a_short_text_query(secured: Running, body: Any) -> None:
    response = await post(secured, "/v1/toolsets/search", body, CONSUMER)
    assert (response.status_code, code_of(response)) == (422, "validation_error")


async def test_unknown_toolsets_and_calls_are_not_found(secured: Running) -> None:
    response = await post(secured, "/v1/toolsets/resolve", {"toolset": "nope"}, CONSUMER)
    assert (response.status_code, code_of(response)) == (404, "not_found")
    response = await post(
        secured,
        "/v1/calls/result",
        {"tool_use_id": "a" * 64, "registration_token": "b" * 64, "wait_ms": 0},
        CONSUMER,
    )
    assert (response.status_code, code_of(response)) == (404, "not_found")


@pytest.mark.parametrize(
    ("token", "code"),
    [
        (None, "unauthenticated"),
        ("forged-token-that-nobody-issued", "unauthenticated"),
        (CONSUMER + "x", "unauthenticated"),  # a stale (rotated) token
        (CONSUMER, "forbidden"),  # a consumer cannot publish
        (OTHER_PROVIDER, "forbidden"),  # a provider only publishes its own toolsets
    ],
)
async def test_who_may_register(secured: Running, token: str | None, code: str) -> None:
    response = await post(secured, "/v1/providers/register", register_body(), token)
    assert code_of(response) == code
    assert response.status_code == {"unauthenticated": 401, "forbidden": 403}[code]
    assert await catalog(secured) == []


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        (b'{"toolset": ', {}),  # not JSON
        (b"[" * 10_000 + b"]" * 10_000, {}),  # nested past the parser's limit
        (b"x" * (LIMIT + 1), {}),  # over the size limit
        (b"{}", {"content-type": "text/plain"}),
        (register_body(extra=1), {}),  # not the operation's model
    ],
    ids=["not-json", "deep", "too-large", "media-type", "invalid"],
)
@pytest.mark.parametrize("token", [None, "forged-token-that-nobody-issued"])
async def test_a_client_without_a_valid_token_is_refused_before_its_body_is_read(
    secured: Running, body: Any, headers: dict[str, str], token: str | None
) -> None:
    # Whatever it sends, a client without a token learns nothing but that (and its bytes are
    # never parsed or validated): 401, not the 400/413/415/422 a known client would get.
    response = await post(secured, "/v1/providers/register", body, token, **headers)
    assert (response.status_code, code_of(response)) == (401, "unauthenticated")


async def test_json_nested_past_the_parsers_limit_is_refused_saying_so(secured: Running) -> None:
    deep = b'{"toolset": ' + b"[" * 10_000 + b"]" * 10_000 + b"}"
    response = await post(secured, "/v1/toolsets/resolve", deep, CONSUMER)
    assert (response.status_code, code_of(response)) == (400, "malformed_json")
    message = response.json()["error"]["message"]
    assert message.startswith("the request body is not valid JSON (recursion limit exceeded")


async def test_each_role_stays_within_its_operations(secured: Running) -> None:
    provider = HttpRegistryClient(secured.url, token=PROVIDER)
    other = HttpRegistryClient(secured.url, token=OTHER_PROVIDER)
    consumer = HttpRegistryClient(secured.url, token=CONSUMER)
    admin = HttpRegistryClient(secured.url, token=ADMIN)
    toolset = echo_toolset()
    done = await provider.register(
        toolset,
        schema_fingerprint=schema_fingerprint(toolset),
        revision="r1",
        provider_id="p1",
        incarnation_id="i1",
        lease_ms=5_000,
    )
    token = done.registration_token

    async def code(coro: Any) -> str:
        with pytest.raises(RegistryError) as info:
            await coro
        # A token refusal names the registry client and the URL it was sent to.
        assert f"registry {consumer.name!r} at {secured.url}: " in str(info.value)
        return info.value.code

    # Providers do not read the catalog or call tools.
    assert await code(provider.list_toolsets()) == "forbidden"
    assert await code(provider.search_toolsets("echo")) == "forbidden"
    assert await code(provider.resolve_toolset("echo")) == "forbidden"
    # Consumers do not claim, complete, renew or unregister.
    common = ("echo", token, "p1", "i1")
    assert await code(consumer.claim(*common, max_calls=1, wait_ms=0, operation_id="o")) == (
        "forbidden"
    )
    assert await code(consumer.renew(*common, 5_000)) == "forbidden"
    assert await code(consumer.unregister("echo", token)) == "forbidden"
    assert (
        await code(
            consumer.complete("echo", "a" * 64, "p1", "i1", status="completed", result_json="1")
        )
        == "forbidden"
    )
    # Another toolset's provider cannot touch this one.
    assert await code(other.claim(*common, max_calls=1, wait_ms=0, operation_id="o")) == (
        "forbidden"
    )
    assert await code(other.drain(*common, 0)) == "forbidden"
    assert await code(other.unregister("echo", token)) == "forbidden"
    # What each may do works, and the admin may do everything.
    assert await consumer.list_toolsets() == ["echo"]
    assert await admin.list_toolsets() == ["echo"]
    assert await consumer.search_toolsets("ECH") == ["echo"]
    assert await consumer.search_toolsets("echo", ["missing-tag"]) == []
    assert await consumer.check_admission("echo", token)
    assert await provider.claim(*common, max_calls=1, wait_ms=0, operation_id="o") == []
    await admin.unregister("echo", token)
    assert await consumer.list_toolsets() == []
    for client in (provider, other, consumer, admin):
        await client.aclose()


async def test_open_registries_need_no_token_and_health_is_public(tmp_path: Path) -> None:
    async with running_registry(SQLiteStore(":memory:")) as running:
        async with httpx2.AsyncClient(base_url=running.url) as http:
            health = (await http.get("/health")).json()
            listed = await http.post(
                "/v1/toolsets/list", content=b"{}", headers={"content-type": "application/json"}
            )
        assert health["status"] == "ok" and health["store"] == "memory"
        assert listed.json() == {"toolsets": []}


def test_token_configuration_errors_name_the_entry(tmp_path: Path) -> None:
    def error(data: Any) -> str:
        with pytest.raises(AuthConfigError) as info:
            TokenTable.from_json(data, "tokens.json")
        return str(info.value)

    assert "expected" in error([])
    root = {"name": "a", "role": "root", "token": "x" * 20}
    assert "role must be one of" in error({"tokens": [root]})
    assert "at least 16 characters" in error({"tokens": [{"role": "consumer", "token": "short"}]})
    assert "names the toolsets it serves" in error(
        {"tokens": [{"role": "provider", "token": "x" * 20}]}
    )
    assert "every token must be distinct" in error(
        {"tokens": [{"name": "a", "role": "consumer", "token": "x" * 20},
                    {"name": "b", "role": "admin", "token": "x" * 20}]}
    )  # fmt: skip
    assert "exactly one of token or sha256" in error({"tokens": [{"role": "admin"}]})
    assert "unknown field" in error({"tokens": [{"role": "admin", "token": "x" * 20, "x": 1}]})
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps(TOKENS))
    assert not TokenTable.from_file(path).empty
    assert not TokenTable.from_env({"AGENTGEN_REGISTRY_TOKENS_FILE": str(path)}).empty
    assert not TokenTable.from_env({"AGENTGEN_REGISTRY_TOKENS": json.dumps(TOKENS)}).empty
    assert TokenTable.from_env({}).empty
    with pytest.raises(AuthConfigError, match="is not JSON"):
        TokenTable.from_env({"AGENTGEN_REGISTRY_TOKENS": "{"})
    both = {"AGENTGEN_REGISTRY_TOKENS_FILE": str(path), "AGENTGEN_REGISTRY_TOKENS": "{}"}
    with pytest.raises(AuthConfigError, match="both AGENTGEN_REGISTRY_TOKENS and .* set only one"):
        TokenTable.from_env(both)


def test_loopback_addresses() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert is_loopback("127.0.0.2") and is_loopback("[::1]")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3")
    assert not is_loopback("example.com") and not is_loopback("::")


def test_the_client_refuses_urls_it_cannot_speak() -> None:
    with pytest.raises(ValueError, match="not an http\\(s\\) URL"):
        HttpRegistryClient("grpc://registry.example", name="company")


async def test_a_password_in_the_registry_url_never_reaches_a_message(secured: Running) -> None:
    # Errors end up in logs, traces and run outcomes: they name the registry by its host.
    host = secured.url.removeprefix("http://")
    port = free_port()  # nothing listens there
    refused = HttpRegistryClient(
        f"http://ops:s3cret-password@{host}", token="forged-token-that-nobody-issued"
    )
    unreachable = HttpRegistryClient(
        f"http://ops:s3cret-password@127.0.0.1:{port}", retry=RetryPolicy(max_retries=0)
    )
    errors = []
    for client in (refused, unreachable):
        with pytest.raises(RegistryError) as info:
            await client.list_toolsets()
        await client.aclose()
        errors.append(info.value)
        assert "s3cret" not in f"{client.name} {client.shown_url} {info.value}"
    assert errors[0].code == "unauthenticated"
    assert f"registry {host!r} at {secured.url}: " in str(errors[0])
    assert errors[1].code == "service_unavailable"
    assert f"registry '127.0.0.1:{port}' at http://127.0.0.1:{port}: " in str(errors[1])


async def test_the_openapi_document_says_which_operations_need_a_token(
    secured: Running, tmp_path: Path
) -> None:
    # The document said nothing of the token every /v1 operation requires: a client generated
    # from it sent none, and met 401 on every call. It now declares the bearer scheme on
    # exactly the operations that refuse a request without one.
    async with httpx2.AsyncClient(base_url=secured.url, timeout=10) as http:
        document = (await http.get("/openapi.json")).json()
        assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
        for path, methods in document["paths"].items():
            for method, operation in methods.items():
                secured_by = operation.get("security")
                answer = await http.request(
                    method, path, content=b"{}", headers={"content-type": "application/json"}
                )
                if answer.status_code == 401:
                    assert secured_by == [{"bearer": []}], (method, path)
                else:
                    assert secured_by is None, (method, path, answer.status_code)
        assert document["paths"]["/v1/calls"]["post"]["security"] == [{"bearer": []}]
        assert "security" not in document["paths"]["/health"]["get"]
    # An open registry asks for no token, and its document says so.
    async with running_registry(SQLiteStore(":memory:")) as running:
        async with httpx2.AsyncClient(base_url=running.url) as http:
            document = (await http.get("/openapi.json")).json()
    assert "securitySchemes" not in document.get("components", {})
    assert all("security" not in op for ops in document["paths"].values() for op in ops.values())
