"""The HTTP registry client refuses what it could not send when it is built, and never quotes
what it sends: a bearer token with a line break, a long-poll wait beyond the API's bound, a
request httpx refuses to send, a health answer of another shape, a design's registries of which
one cannot be connected."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest

from agentgen.runtime import Runtime
from agentgen.runtime.registry import http_client
from agentgen.runtime.registry.client import CallRef, RegistryError
from agentgen.runtime.registry.http_client import (
    ENV_TOKEN,
    HttpRegistryClient,
    HttpResultStream,
    RetryPolicy,
    connect_registries,
)
from agentgen.runtime.registry.sqlite_store import SQLiteStore
from tests.registry.conftest import Running, running_registry
from tests.registry.test_provider_resilience import Echo, admit, call, serving

SECRET = "s3cr3t-provider-token"


@pytest.fixture
async def registry() -> AsyncIterator[Running]:
    async with running_registry(SQLiteStore(":memory:")) as running:
        yield running


# --- bearer tokens ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "problem"),
    [
        (SECRET + "\n", "its last character is a line break"),
        (SECRET + "\r\n", "character 22 is a line break"),
        ("s3cr3t provider", "character 7 is whitespace"),
        ("s3cr3t\tprovider", "character 7 is whitespace"),
        ("s3cr3t\x1bprovider", "character 7 is a control character"),
        ("s3cr3t\u00e9provider", "character 7 is a non-ASCII character"),
    ],
)
def test_a_token_that_cannot_be_sent_is_refused_by_the_constructor_without_quoting_it(
    monkeypatch: pytest.MonkeyPatch, token: str, problem: str
) -> None:
    """A token read from a file with its trailing newline was taken; every request then failed
    inside httpx, was retried as an outage, and its error, which reached run failures and the
    tool errors a model reads, quoted ``Bearer <token>``."""
    with pytest.raises(ValueError) as given:
        HttpRegistryClient("http://127.0.0.1:1", token=token, name="company")
    assert str(given.value) == (
        f"registry 'company': the bearer token given by token= cannot be sent: {problem}. A "
        "token is visible ASCII only; one read from a file often ends with a newline: strip it "
        "where the token is read (the token is not shown here)"
    )
    monkeypatch.setenv(ENV_TOKEN, token)
    with pytest.raises(ValueError) as from_env:
        HttpRegistryClient("http://127.0.0.1:1", name="company")
    assert f"the bearer token given by ${ENV_TOKEN} cannot be sent: {problem}" in str(
        from_env.value
    )
    for refused in (given.value, from_env.value):
        assert "s3cr3t" not in str(refused)


async def test_a_token_from_the_environment_is_sent_as_it_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[str | None] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.headers.get("authorization"))
        return httpx2.Response(200, json={"toolsets": []})

    monkeypatch.setenv(ENV_TOKEN, SECRET)
    async with HttpRegistryClient(
        "http://127.0.0.1:1", transport=httpx2.MockTransport(answer)
    ) as client:
        assert await client.list_toolsets() == []
    assert seen == [f"Bearer {SECRET}"]


async def test_a_request_httpx_refuses_to_send_is_not_retried_nor_quoted() -> None:
    """httpx's LocalProtocolError was taken for an outage (retried four times) and its text,
    which quotes the offending header, went into the error."""
    attempts: list[httpx2.Request] = []

    def refuse(request: httpx2.Request) -> httpx2.Response:
        attempts.append(request)
        raise httpx2.LocalProtocolError(f"Illegal header value b'Bearer {SECRET}\\n'")

    client = HttpRegistryClient(
        "http://127.0.0.1:1",
        name="company",
        transport=httpx2.MockTransport(refuse),
        retry=RetryPolicy(max_retries=3, backoff_base=0.0),
    )
    for request in (client.list_toolsets(), client.health()):
        with pytest.raises(RegistryError) as refused:
            await request
        assert refused.value.code == "protocol_error"
        assert SECRET not in str(refused.value)
        assert "could not be sent: httpx refused the request as malformed (LocalProtocolError;" in (
            refused.value.message
        )
    assert len(attempts) == 2  # once each: the same request would be refused the same way
    await client.aclose()


async def test_an_answer_that_does_not_decode_as_its_encoding_says_is_a_protocol_error() -> None:
    """httpx's DecodingError (a body that is not the gzip its Content-Encoding names: a proxy
    rewriting answers) escaped every method as itself, naming no registry; in the provider
    SDK's claim loop it ended serving without a drain or a release."""
    attempts: list[httpx2.Request] = []

    def garbled(request: httpx2.Request) -> httpx2.Response:
        attempts.append(request)
        return httpx2.Response(200, headers={"Content-Encoding": "gzip"}, content=b"not gzip")

    client = HttpRegistryClient(
        "http://127.0.0.1:1",
        name="company",
        transport=httpx2.MockTransport(garbled),
        retry=RetryPolicy(max_retries=3, backoff_base=0.0),
    )
    for request, path in ((client.list_toolsets(), "/toolsets/list"), (client.health(), "/health")):
        with pytest.raises(RegistryError) as unreadable:
            await request
        assert unreadable.value.code == "protocol_error"
        assert unreadable.value.message.startswith(
            f"registry 'company' at http://127.0.0.1:1 answered {path} with a body that cannot "
            "be decoded as its Content-Encoding says (DecodingError: "
        )
        assert unreadable.value.message.endswith(
            "check what stands between this client and the registry (a proxy rewriting answers)"
        )
    assert len(attempts) == 2  # once each: read again, the answer would not decode either
    await client.aclose()


# --- waits -----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [60_001, 120_000, -1])
def test_a_result_stream_wait_the_api_cannot_carry_is_refused_by_the_constructor(
    value: Any,
) -> None:
    """poll_ms=120_000 was taken: the call was admitted and ran, then waiting for its outcome
    raised a bare pydantic ValidationError (the run read it as an unknown outcome)."""
    client = HttpRegistryClient("http://127.0.0.1:1", name="company")
    with pytest.raises(ValueError) as refused:
        HttpResultStream(client, poll_ms=value)
    assert str(refused.value) == (
        f"result stream of registry 'company': poll_ms={value!r} is out of bounds: a whole "
        "number of milliseconds from 0 to 60,000 (the longest wait the registry's API carries)"
    )


@pytest.mark.parametrize("value", [1.5, True, None, "500"])
def test_a_wait_that_is_not_an_int_is_a_type_error(value: Any) -> None:
    """A wrong type, as every public constructor says it (it was a ValueError "out of
    bounds")."""
    client = HttpRegistryClient("http://127.0.0.1:1", name="company")
    with pytest.raises(TypeError) as refused:
        HttpResultStream(client, poll_ms=value)
    assert str(refused.value) == (
        "result stream of registry 'company': poll_ms must be a whole number of milliseconds "
        f"(an int), not {value!r} ({type(value).__name__})"
    )
    if value is not None:  # call_wait_ms=None is the default wait
        with pytest.raises(TypeError, match="registry 'company': call_wait_ms must be a whole"):
            HttpRegistryClient("http://127.0.0.1:1", name="company", call_wait_ms=value)


@pytest.mark.parametrize("value", [60_001, -5])
def test_a_call_wait_the_api_cannot_carry_is_refused_by_the_constructor(value: Any) -> None:
    """call_wait_ms=90_000 was taken, then every admission failed with a ValidationError."""
    with pytest.raises(ValueError) as refused:
        HttpRegistryClient("http://127.0.0.1:1", name="company", call_wait_ms=value)
    assert str(refused.value) == (
        f"registry 'company': call_wait_ms={value!r} is out of bounds: a whole number of "
        "milliseconds from 0 to 60,000 (the longest wait the registry's API carries)"
    )


# --- retries ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (
            {"max_retries": 10**9},
            "RetryPolicy max_retries must be from 0 to 100 (MAX_RETRIES), not 1000000000: each "
            "retry is another request and another wait, so an outage would hold the request "
            "instead of failing it",
        ),
        (
            {"max_retries": -1},
            "RetryPolicy max_retries must be from 0 to 100 (MAX_RETRIES), not -1",
        ),
        (
            {"backoff_base": 3600.0, "backoff_max": 86400.0},
            "RetryPolicy backoff_base must be from 0 to 60 seconds (MAX_BACKOFF_S), not 3600.0: "
            "a longer wait between retries holds the request through an outage instead of "
            "failing it",
        ),
        (
            {"backoff_max": 60.001},
            "RetryPolicy backoff_max must be from 0 to 60 seconds (MAX_BACKOFF_S), not 60.001:",
        ),
        (
            {"backoff_max": float("nan")},
            "RetryPolicy backoff_max must be from 0 to 60 seconds (MAX_BACKOFF_S), not nan",
        ),
        ({"backoff_base": -0.5}, "RetryPolicy backoff_base must be from 0 to 60 seconds"),
        (
            {"backoff_base": 5.0, "backoff_max": 1.0},
            "RetryPolicy backoff_base (5.0) must not exceed backoff_max (1.0)",
        ),
    ],
)
def test_a_retry_policy_the_design_would_refuse_is_refused_when_built(
    given: dict[str, Any], expected: str
) -> None:
    """A hand-built RetryPolicy took a billion retries or a day's backoff (the design's Retry
    refuses both): a provider or a command held through an outage for days."""
    with pytest.raises(ValueError) as refused:
        RetryPolicy(**given)
    assert str(refused.value).startswith(expected)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"max_retries": 3.0}, "RetryPolicy max_retries must be an int, not float"),
        ({"max_retries": "3"}, "RetryPolicy max_retries must be an int, not str"),
        ({"backoff_max": "5s"}, "RetryPolicy backoff_max must be seconds (a float), not str"),
        ({"backoff_base": True}, "RetryPolicy backoff_base must be seconds (a float), not bool"),
    ],
)
def test_a_retry_policy_option_of_the_wrong_type_is_a_type_error(
    given: dict[str, Any], expected: str
) -> None:
    """A wrong type, as LocalRegistry's store and every public constructor say it: RetryPolicy
    raised ValueError for it, as for a value out of bounds."""
    with pytest.raises(TypeError) as refused:
        RetryPolicy(**given)
    assert str(refused.value) == expected


def test_retry_policies_at_the_bounds_are_taken() -> None:
    at_bounds = RetryPolicy(max_retries=100, backoff_base=60, backoff_max=60.0)
    client = HttpRegistryClient("http://127.0.0.1:1", name="company", retry=at_bounds)
    assert client.retry is at_bounds
    assert 30.0 <= at_bounds.delay(10**6) <= 60.0
    asyncio.run(client.aclose())


def test_a_client_refuses_retry_settings_the_design_would_refuse() -> None:
    """Settings edited by hand (or a retry that is no RetryPolicy) were taken unchecked."""
    from examples.company.gen.registries import REGISTRIES, RetrySettings

    with pytest.raises(TypeError) as refused:
        HttpRegistryClient("http://127.0.0.1:1", name="company", retry={"max_retries": 5})  # type: ignore[arg-type]
    assert str(refused.value) == (
        "registry 'company': retry must be a RetryPolicy(max_retries, backoff_base, "
        "backoff_max), not dict"
    )
    slow = RetrySettings(max_retries=3, backoff_base=0.1, backoff_max=86_400.0)
    with pytest.raises(ValueError) as refused:
        HttpRegistryClient.from_settings(dataclasses.replace(REGISTRIES["company"], retry=slow))
    assert str(refused.value).startswith(
        "registry 'company': its Retry settings cannot be used: RetryPolicy backoff_max must be "
        "from 0 to 60 seconds (MAX_BACKOFF_S), not 86400.0"
    )


async def test_waits_at_the_bounds_are_taken(registry: Running) -> None:
    impl = Echo()
    async with serving(registry.url, impl):
        async with HttpRegistryClient(registry.url, call_wait_ms=60_000) as client:
            outcome = await call(registry.url, "hi", poll_ms=60_000, client=client)
            assert HttpResultStream(client, poll_ms=0).poll_ms == 0
    assert (outcome.status, json.loads(outcome.payload_json)) == ("completed", {"said": "hi"})


async def test_a_result_stream_that_does_not_wait_pauses_between_pending_polls(
    registry: Running,
) -> None:
    """poll_ms=0 (taken since it is within bounds) asked for a running call's outcome again as
    soon as each ``pending`` came: 1,249 polls in a second, for as long as the call ran."""
    impl = Echo()
    async with serving(registry.url, impl):
        async with HttpRegistryClient(registry.url, call_wait_ms=0) as client:
            ref = await admit(client, "wait")
            asked: list[float] = []
            poll = client.poll_result

            async def timed(*args: Any, **kwargs: Any) -> Any:
                asked.append(time.monotonic())
                if len(asked) == 4:
                    impl.release.set()  # the call ends after four polls
                return await poll(*args, **kwargs)

            client.poll_result = timed  # type: ignore[method-assign]
            outcome = await asyncio.wait_for(
                HttpResultStream(client, poll_ms=0).await_result(ref), 30
            )
    assert outcome.status == "completed"
    gaps = [later - earlier for earlier, later in itertools.pairwise(asked[:4])]
    # A lower bound only: the pause may take longer, never shorter.
    assert len(gaps) == 3 and min(gaps) >= http_client._POLL_INTERVAL * 0.95, gaps


async def test_a_result_stream_waits_out_an_outage_of_more_than_a_thousand_polls() -> None:
    """The backoff computed ``backoff_base * 2**attempt`` before capping it: a stream waiting
    out a long outage (about 40 minutes at the default policy) raised a bare OverflowError."""
    failed = 0

    def registry_down_then_back(request: httpx2.Request) -> httpx2.Response:
        nonlocal failed
        if failed < 1_100:
            failed += 1
            error = {"code": "service_unavailable", "message": "registry store down"}
            return httpx2.Response(503, json={"error": error})
        return httpx2.Response(200, json={"status": "completed", "result_json": '{"said":"hi"}'})

    tiny = RetryPolicy(max_retries=0, backoff_base=1e-9, backoff_max=1e-9)
    async with HttpRegistryClient(
        "http://127.0.0.1:1",
        name="company",
        retry=tiny,
        transport=httpx2.MockTransport(registry_down_then_back),
    ) as client:
        later = int(client.registry_time_ms()) + 3_600_000
        ref = CallRef("a" * 64, "b" * 64, later, later)
        outcome = await HttpResultStream(client, poll_ms=0).await_result(ref)
    assert failed == 1_100
    assert (outcome.status, outcome.payload_json) == ("completed", '{"said":"hi"}')


# --- health ----------------------------------------------------------------------------------


async def test_a_health_answer_of_another_shape_is_a_protocol_error() -> None:
    """A 200 answer that is no registry health (another service at the URL) raised a bare
    pydantic ValidationError."""

    def other_service(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json={"hello": "world"})

    async with HttpRegistryClient(
        "http://127.0.0.1:1", name="company", transport=httpx2.MockTransport(other_service)
    ) as client:
        with pytest.raises(RegistryError) as refused:
            await client.health()
    assert refused.value.code == "protocol_error"
    assert refused.value.message.startswith(
        "registry 'company' at http://127.0.0.1:1 answered /health with an unexpected body: "
    )
    assert refused.value.message.endswith("is the URL that of an agentgen registry?")


async def test_health_of_a_live_registry(registry: Running) -> None:
    async with HttpRegistryClient(registry.url) as client:
        assert (await client.health()).model_dump()["status"] == "ok"


# --- connecting a design's registries --------------------------------------------------------


def test_registries_are_registered_only_once_every_client_could_be_made() -> None:
    """With a bad URL for the second registry, the first was registered already (its client
    never handed to anyone to close) when the error came."""
    from examples.company.gen.registries import REGISTRIES

    company = REGISTRIES["company"]
    settings = {"company": company, "other": dataclasses.replace(company, name="other")}
    rt = Runtime()
    with pytest.raises(ValueError) as refused:
        connect_registries(
            rt,
            settings,
            ["company", "other"],
            urls={"company": "http://127.0.0.1:1", "other": "ftp://127.0.0.1:2"},
        )
    assert "'ftp://127.0.0.1:2' is not an http(s) URL" in str(refused.value)
    for name in settings:
        with pytest.raises(LookupError):
            rt.registry(name)  # nothing was registered

    made = connect_registries(
        rt, settings, ["company", "other", "company"], urls={"other": "http://127.0.0.1:2"}
    )
    assert [client.name for client in made.clients] == ["company", "other"]
    assert [rt.registry(name).client for name in settings] == list(made.clients)
    asyncio.run(made.aclose())


def test_a_design_asking_for_another_api_version_is_refused_not_ignored() -> None:
    """The client speaks the service's /v1 API: APIVersion("v2") got /v1 silently."""
    from examples.company.gen.registries import REGISTRIES

    company = dataclasses.replace(REGISTRIES["company"], api_version="v2")
    with pytest.raises(ValueError) as refused:
        HttpRegistryClient.from_settings(company)
    message = str(refused.value)
    assert "registry 'company'" in message and "'v2'" in message and "speaks 'v1'" in message
    client = HttpRegistryClient.from_settings(REGISTRIES["company"])  # v1: accepted
    assert client.name == "company"
    asyncio.run(client.aclose())


@pytest.mark.parametrize("status", [408, 429])
async def test_a_gateways_ask_again_later_is_retried_not_a_protocol_error(status: int) -> None:
    """The registry never answers 408 or 429 itself: a proxy's page saying so was taken for a
    ``protocol_error``, which stops a provider for good, where a retry goes through."""
    asked = 0

    def gateway_then_registry(request: httpx2.Request) -> httpx2.Response:
        nonlocal asked
        asked += 1
        if asked < 3:
            return httpx2.Response(status, text="<html>slow down</html>")
        return httpx2.Response(200, json={"toolsets": ["echo"]})

    quick = RetryPolicy(max_retries=3, backoff_base=1e-3, backoff_max=1e-3)
    async with HttpRegistryClient(
        "http://127.0.0.1:1",
        name="company",
        retry=quick,
        transport=httpx2.MockTransport(gateway_then_registry),
    ) as client:
        assert await client.list_toolsets() == ["echo"]
    assert asked == 3

    def always_gateway(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(status, text="<html>slow down</html>")

    async with HttpRegistryClient(
        "http://127.0.0.1:1",
        name="company",
        retry=quick,
        transport=httpx2.MockTransport(always_gateway),
    ) as client:
        with pytest.raises(RegistryError) as given_up:
            await client.list_toolsets()
        assert given_up.value.code == "service_unavailable"
        assert f"after 4 attempt(s): HTTP {status}: <html>slow down</html>" in str(
            given_up.value.message
        )
        with pytest.raises(RegistryError) as unhealthy:
            await client.health()
        assert unhealthy.value.code == "service_unavailable"


async def test_a_page_that_is_no_registry_error_names_the_url_and_the_request() -> None:
    # "registry 'company' answered HTTP 400: <html>..." said neither where nor what was asked.
    def other_service(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(400, text="<html>\n<h1>Bad Request</h1></html>")

    async with HttpRegistryClient(
        "http://127.0.0.1:1", name="company", transport=httpx2.MockTransport(other_service)
    ) as client:
        with pytest.raises(RegistryError) as refused:
            await client.list_toolsets()
    assert refused.value.code == "protocol_error"
    assert refused.value.message == (
        "registry 'company' at http://127.0.0.1:1 answered /toolsets/list with HTTP 400 and a "
        "body that is no registry error (a proxy's or another service's page; check the URL and "
        "what stands between): <html>\\x0a<h1>Bad Request</h1></html>"
    )


_QUICK = RetryPolicy(max_retries=3, backoff_base=1e-3, backoff_max=1e-3)


@pytest.mark.parametrize(("status", "code"), [(401, "unauthenticated"), (403, "forbidden")])
async def test_a_gateways_credential_refusal_says_to_check_the_credentials(
    status: int, code: str
) -> None:
    """A gateway's non-JSON 401 or 403 was a protocol_error ("could not be read": check the
    URL's registry version), which sent an operator looking in the wrong place. Asking again
    cannot change it: refused at once, as the registry's own refusal would be."""
    asked = 0

    def gateway(request: httpx2.Request) -> httpx2.Response:
        nonlocal asked
        asked += 1
        return httpx2.Response(status, text="<html>Sign in</html>")

    async with HttpRegistryClient(
        "http://127.0.0.1:1", name="company", retry=_QUICK, transport=httpx2.MockTransport(gateway)
    ) as client:
        with pytest.raises(RegistryError) as refused:
            await client.list_toolsets()
    assert asked == 1
    assert refused.value.code == code
    assert refused.value.message == (
        f"registry 'company' at http://127.0.0.1:1 answered /toolsets/list with HTTP {status} "
        "and a page that is no registry error: a proxy or gateway in front of the registry "
        "refused the request's credentials. Check the credentials this client sends (its "
        "bearer token: token= or $AGENTGEN_REGISTRY_TOKEN) and what the gateway at that URL "
        "requires: <html>Sign in</html>"
    )


async def test_a_gateways_not_found_page_is_asked_again_as_a_5xx() -> None:
    """A gateway being deployed answers 404 pages for a while: taken for a protocol_error, it
    stopped a provider for good. The registry's own 404 (JSON) is still a refusal."""
    asked = 0

    def deploying_gateway(request: httpx2.Request) -> httpx2.Response:
        nonlocal asked
        asked += 1
        if asked < 3:
            return httpx2.Response(404, text="<html>404 page not found</html>")
        return httpx2.Response(200, json={"toolsets": ["echo"]})

    async with HttpRegistryClient(
        "http://127.0.0.1:1",
        name="company",
        retry=_QUICK,
        transport=httpx2.MockTransport(deploying_gateway),
    ) as client:
        assert await client.list_toolsets() == ["echo"]
    assert asked == 3

    def wrong_url(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(404, text="<html>404 page not found</html>")

    async with HttpRegistryClient(
        "http://127.0.0.1:1",
        name="company",
        retry=_QUICK,
        transport=httpx2.MockTransport(wrong_url),
    ) as client:
        with pytest.raises(RegistryError) as given_up:
            await client.list_toolsets()
    assert given_up.value.code == "service_unavailable"
    assert given_up.value.message == (
        "registry 'company' at http://127.0.0.1:1: /toolsets/list failed after 4 attempt(s): "
        "HTTP 404: a body that is no registry error (a gateway without a route to the "
        "registry, as while it is deployed, or a URL that is not the registry's root; check "
        "the URL and what stands between): <html>404 page not found</html>"
    )
    asked = 0

    def registry_not_found(request: httpx2.Request) -> httpx2.Response:
        nonlocal asked
        asked += 1
        error = {"code": "not_found", "message": 'toolset "x" not found'}
        return httpx2.Response(404, json={"error": error})

    async with HttpRegistryClient(
        "http://127.0.0.1:1",
        name="company",
        retry=_QUICK,
        transport=httpx2.MockTransport(registry_not_found),
    ) as client:
        with pytest.raises(RegistryError) as refused:
            await client.resolve_toolset("x")
    assert (refused.value.code, asked) == ("not_found", 1)


async def test_a_gateways_body_limit_is_body_too_large() -> None:
    """nginx's default body limit is the registry's (1 MiB): its 413 page was a
    protocol_error, and a provider lost a large result instead of completing the call with
    result_too_large."""

    def gateway(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(413, text="<html>413 Request Entity Too Large</html>")

    async with HttpRegistryClient(
        "http://127.0.0.1:1", name="company", retry=_QUICK, transport=httpx2.MockTransport(gateway)
    ) as client:
        with pytest.raises(RegistryError) as refused:
            await client.list_toolsets()
    assert refused.value.code == "body_too_large"
    assert "refused the request's body as too large (its limit is below the registry's" in (
        refused.value.message
    )


@pytest.mark.parametrize("status", [301, 308])
async def test_a_redirect_is_named_with_where_it_goes(status: int) -> None:
    """A gateway sending http to https: its redirect's body was read as the registry's answer,
    and the error said only "an unexpected body" (or, for /health, "is the URL that of an
    agentgen registry?")."""

    def gateway(request: httpx2.Request) -> httpx2.Response:
        target = str(request.url).replace("http://", "https://")
        return httpx2.Response(status, headers={"location": target}, text="<html>Moved</html>")

    async with HttpRegistryClient(
        "http://127.0.0.1:1", name="company", transport=httpx2.MockTransport(gateway)
    ) as client:
        with pytest.raises(RegistryError) as refused:
            await client.list_toolsets()
        with pytest.raises(RegistryError) as unhealthy:
            await client.health()
    assert refused.value.code == "protocol_error"
    assert refused.value.message == (
        f"registry 'company' at http://127.0.0.1:1 answered /toolsets/list with HTTP {status}, "
        "a redirect to https://127.0.0.1:1/v1/toolsets/list, which the client does not follow: "
        "set the registry's URL to where it redirects (https:// for a gateway that sends http "
        "there)"
    )
    assert unhealthy.value.code == "protocol_error"
    assert "with HTTP" in unhealthy.value.message
    assert "a redirect to https://127.0.0.1:1/health" in unhealthy.value.message
