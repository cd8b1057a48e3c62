"""What the adapters raise when a provider request fails, through the real SDKs: a
:class:`ModelError` that names the provider and model, keeps the provider's HTTP status, and says
whether a later attempt may pass (a rate limit, an overloaded or unavailable provider, a broken
connection), which is what a durable engine retries; a client that cannot even send the request
(a missing AWS profile) is a configuration mistake, wrapped too and never retried."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import boto3  # type: ignore[import-untyped]
import httpx2
import openai
import pytest
from botocore.config import Config  # type: ignore[import-untyped]
from botocore.exceptions import EndpointConnectionError  # type: ignore[import-untyped]
from botocore.stub import Stubber  # type: ignore[import-untyped]

from agentgen.runtime.adapters import (
    AnthropicMessagesModel,
    BedrockConverseModel,
    ModelError,
    OpenAIResponsesModel,
)
from agentgen.runtime.adapters.errors import ANSWERED_BY_HEADER
from agentgen.runtime.engines.temporal.errors import retryable
from tests.adapters.fakes import openai_client, openai_server, response
from tests.adapters.tools import RECORDS, request

CLAUDE = "claude-opus-4-7"
CONVERSE = "amazon.nova-pro-v1:0"

Handler = Callable[[httpx2.Request], httpx2.Response]


def answering(status: int, body: dict[str, Any]) -> Handler:
    def handler(_: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(status, json=body)

    return handler


def unreachable(request: httpx2.Request) -> httpx2.Response:
    raise httpx2.ConnectError("connection refused", request=request)


def claude(handler: Handler) -> AnthropicMessagesModel:
    return AnthropicMessagesModel(
        anthropic.AsyncAnthropic(
            api_key="sk-ant-test",
            base_url="http://stub.local",
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
            _strict_response_validation=True,
        )
    )


def claude_error(kind: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": f"{kind} from the stub"}}


@pytest.mark.parametrize(
    ("status", "kind", "transient"),
    [
        (429, "rate_limit_error", True),
        (529, "overloaded_error", True),
        (500, "api_error", True),
        (503, "api_error", True),
        (400, "invalid_request_error", False),
        (401, "authentication_error", False),
        (404, "not_found_error", False),
    ],
)
async def test_claude_error_answers_keep_their_status_and_retry_when_they_may_pass(
    status: int, kind: str, transient: bool
) -> None:
    with pytest.raises(ModelError) as caught:
        await claude(answering(status, claude_error(kind))).complete(
            request(tools=(RECORDS,), model=CLAUDE)
        )
    error = caught.value
    assert (error.status, error.transient, retryable(error)) == (status, transient, transient)
    assert f"anthropic: the request for model {CLAUDE!r} failed with HTTP {status}" in str(error)
    assert f"{kind} from the stub" in str(error)
    assert isinstance(error.__cause__, anthropic.APIStatusError)


async def test_a_claude_request_that_got_no_answer_is_retried() -> None:
    with pytest.raises(
        ModelError, match="failed without an answer.*a later attempt may pass"
    ) as caught:
        await claude(unreachable).complete(request(tools=(RECORDS,), model=CLAUDE))
    assert caught.value.status is None and retryable(caught.value)


@pytest.fixture
def no_aws_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    """No AWS profile, credentials or instance metadata: nothing can sign a request."""
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def never_sent(_: httpx2.Request) -> httpx2.Response:
    raise AssertionError("nothing can be sent without credentials")


@pytest.mark.usefixtures("no_aws_configuration")
async def test_a_missing_aws_profile_on_claude_on_bedrock_is_a_configuration_error() -> None:
    model = AnthropicMessagesModel(
        anthropic.AsyncAnthropicBedrock(
            aws_profile="no-such-profile",
            aws_region="us-west-2",
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(never_sent)),
        )
    )
    with pytest.raises(ModelError) as caught:
        await model.complete(request(tools=(RECORDS,), model="us.anthropic.claude-opus-4-7"))
    message = str(caught.value)
    assert "anthropic on bedrock: the client could not send the request for model" in message
    assert "'us.anthropic.claude-opus-4-7'" in message and "no-such-profile" in message
    assert "check the client's configuration" in message
    assert type(caught.value.__cause__).__name__ == "ProfileNotFound"
    assert not retryable(caught.value)


@pytest.mark.usefixtures("no_aws_configuration")
async def test_openai_on_bedrock_without_credentials_is_a_configuration_error() -> None:
    provider = openai.providers.bedrock(
        endpoint="runtime", region="us-west-2", profile="no-such-profile"
    )
    model = OpenAIResponsesModel(
        openai.AsyncOpenAI(
            provider=provider,
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(never_sent)),
        )
    )
    with pytest.raises(ModelError, match="could not send the request for model 'openai.gpt-oss"):
        await model.complete(request(tools=(RECORDS,), model="openai.gpt-oss-120b-1:0"))


def openai_answering(handler: Handler) -> OpenAIResponsesModel:
    return OpenAIResponsesModel(
        openai.AsyncOpenAI(
            api_key="sk-test",
            base_url="http://stub.local/v1",
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
        )
    )


@pytest.mark.parametrize(("status", "transient"), [(429, True), (503, True), (400, False)])
async def test_openai_error_answers_keep_their_status(status: int, transient: bool) -> None:
    model = openai_answering(answering(status, {"error": {"message": "no"}}))
    with pytest.raises(ModelError) as caught:
        await model.complete(request(tools=(RECORDS,)))
    assert (caught.value.status, retryable(caught.value)) == (status, transient)


async def test_an_openai_account_out_of_quota_is_not_retried() -> None:
    # 429 like a rate limit, but it lasts until someone changes the plan or billing.
    quota = {
        "error": {
            "message": "You exceeded your current quota, please check your plan and billing.",
            "type": "insufficient_quota",
            "param": None,
            "code": "insufficient_quota",
        }
    }
    with pytest.raises(ModelError) as caught:
        await openai_answering(answering(429, quota)).complete(request(tools=(RECORDS,)))
    error = caught.value
    assert (error.status, error.transient, retryable(error)) == (429, False, False)
    cause = error.__cause__
    assert isinstance(cause, openai.RateLimitError)
    assert not retryable(cause)  # the raw SDK error, as a planner of your own might raise it
    assert "out of quota" in str(error) and "billing" in str(error)
    assert "later attempt may pass" not in str(error)


#: ``error.code`` of a 200 response with status "failed", and whether a later attempt may pass:
#: the provider's own failures are transient, as they are when answered with HTTP 500 or 429.
FAILED_CODES = [
    ("server_error", True),
    ("rate_limit_exceeded", True),
    ("invalid_prompt", False),
    ("image_content_policy_violation", False),
]


@pytest.mark.parametrize(("code", "transient"), FAILED_CODES)
async def test_an_openai_response_that_failed_is_retried_when_the_failure_may_pass(
    code: str, transient: bool
) -> None:
    # Before: never transient, though the message said "retry the request".
    failed = response(status="failed")
    failed["error"] = {"code": code, "message": "boom"}
    with pytest.raises(ModelError) as caught:
        await OpenAIResponsesModel(openai_client(openai_server(failed))).complete(request())
    error = caught.value
    assert (error.transient, retryable(error)) == (transient, transient)
    message = str(error)
    assert f"has status 'failed': {code}: boom; it holds no answer" in message
    assert ("later attempt may pass" in message) is transient
    assert ("retry" in message) is transient  # only "(durable runs retry it)"


@pytest.fixture
def converse() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-west-2",
        aws_access_key_id="AKIDTEST",
        aws_secret_access_key="secret",
    )
    with Stubber(client) as stubber:
        yield client, stubber


@pytest.mark.parametrize(
    ("code", "status", "transient"),
    [
        # Converse's errors as botocore's service model declares them (code, HTTP status).
        ("ThrottlingException", 429, True),
        ("ModelNotReadyException", 429, True),
        ("ModelTimeoutException", 408, True),
        ("InternalServerException", 500, True),
        ("ServiceUnavailableException", 503, True),
        ("ValidationException", 400, False),
        ("AccessDeniedException", 403, False),
        ("ResourceNotFoundException", 404, False),
    ],
)
async def test_converse_errors_retry_when_they_may_pass(
    converse: tuple[Any, Stubber], code: str, status: int, transient: bool
) -> None:
    client, stubber = converse
    stubber.add_client_error("converse", code, f"{code} from the stub", http_status_code=status)
    with pytest.raises(ModelError) as caught:
        await BedrockConverseModel(client).complete(request(tools=(RECORDS,), model=CONVERSE))
    error = caught.value
    assert (error.status, error.transient, retryable(error)) == (status, transient, transient)
    assert f"bedrock converse: the request for model {CONVERSE!r} failed" in str(error)
    assert code in str(error)


async def test_a_converse_endpoint_that_cannot_be_reached_is_retried() -> None:
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-west-2",
        aws_access_key_id="AKIDTEST",
        aws_secret_access_key="secret",
        config=Config(retries={"max_attempts": 1}),
    )

    def refuse(**_: Any) -> None:
        # What botocore's HTTP layer raises when the endpoint refuses the connection.
        raise EndpointConnectionError(endpoint_url="https://bedrock-runtime.us-west-2.invalid")

    client.meta.events.register("before-send.bedrock-runtime.Converse", refuse)
    with pytest.raises(ModelError, match="failed without an answer") as caught:
        await BedrockConverseModel(client).complete(request(tools=(RECORDS,), model=CONVERSE))
    assert retryable(caught.value)


async def test_an_answer_the_sdk_cannot_read_is_not_called_an_error_answer() -> None:
    # A 200 whose body is not a message (strict response validation): no status, no retry.
    with pytest.raises(ModelError) as caught:
        await claude(answering(200, {"type": "message"})).complete(
            request(tools=(RECORDS,), model=CLAUDE)
        )
    assert f"anthropic: the request for model {CLAUDE!r} failed: APIResponseValidationError" in (
        str(caught.value)
    )
    assert caught.value.status is None and not retryable(caught.value)


def answered_by(name: str | None, status: int, body: dict[str, Any]) -> Handler:
    def handler(_: httpx2.Request) -> httpx2.Response:
        headers = {ANSWERED_BY_HEADER: name} if name is not None else {}
        return httpx2.Response(status, json=body, headers=headers)

    return handler


async def test_a_refusal_a_stand_in_answered_is_not_called_the_providers() -> None:
    # agentgen's recording player (or any local stand-in) marks its answers: a 400 of its own
    # said "the provider refused this request: fix what it names", though no provider was asked.
    stand_in = "agentgen's recording player (recording.json)"
    refused = claude_error("invalid_request_error")
    with pytest.raises(ModelError) as caught:
        await claude(answered_by(stand_in, 400, refused)).complete(
            request(tools=(RECORDS,), model=CLAUDE)
        )
    text = str(caught.value)
    assert "the provider refused" not in text
    assert text.endswith(f"; answered by {stand_in}, not by a provider: fix what it names")
    assert (caught.value.status, retryable(caught.value)) == (400, False)
    with pytest.raises(ModelError) as caught:
        await openai_answering(answered_by(stand_in, 503, {"error": {"message": "x"}})).complete(
            request(tools=(RECORDS,))
        )
    assert f"; answered by {stand_in}, not by a provider: a later attempt may pass" in str(
        caught.value
    )
    assert retryable(caught.value)


async def test_a_providers_refusal_is_still_called_so() -> None:
    refused = claude_error("invalid_request_error")
    with pytest.raises(ModelError, match="; the provider refused this request: fix what it names$"):
        await claude(answered_by(None, 400, refused)).complete(
            request(tools=(RECORDS,), model=CLAUDE)
        )
