"""Access control: bearer tokens with roles.

Every request carries ``Authorization: Bearer <token>``. A token has a role: ``provider`` (for
the toolsets it names: register, renew, drain, release, unregister, claim, complete, report
overloads), ``consumer`` (list, resolve, check admissions, call, retry, wait for results) or
``admin`` (everything). Tokens come from a JSON file or the ``AGENTGEN_REGISTRY_TOKENS``
environment variable::

    {"tokens": [
      {"name": "records-provider", "role": "provider", "toolsets": ["records"], "token": "..."},
      {"name": "assistant", "role": "consumer", "sha256": "<hex SHA-256 of the token>"}
    ]}

A token may be given in clear (``token``) or as its SHA-256 (``sha256``), so a file need not hold
secrets. Without any token the registry runs open, and then only on a loopback address.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agentgen.runtime.registry.client import RegistryError

__all__ = [
    "ENV_TOKENS",
    "ENV_TOKENS_FILE",
    "LOCAL",
    "MIN_TOKEN_LENGTH",
    "AuthConfigError",
    "Principal",
    "Role",
    "TokenTable",
    "is_loopback",
]

Role = Literal["provider", "consumer", "admin"]
ENV_TOKENS = "AGENTGEN_REGISTRY_TOKENS"
ENV_TOKENS_FILE = "AGENTGEN_REGISTRY_TOKENS_FILE"
MIN_TOKEN_LENGTH = 16
_ROLES = ("provider", "consumer", "admin")


class AuthConfigError(ValueError):
    """The token configuration is unusable; the message names the entry."""


@dataclass(frozen=True)
class Principal:
    name: str
    role: Role
    #: For providers: the toolsets they may publish and serve.
    toolsets: frozenset[str] = frozenset()

    def require_consumer(self) -> None:
        if self.role not in ("consumer", "admin"):
            raise RegistryError(
                "forbidden",
                f"token {self.name!r} has role {self.role!r}; this operation needs a consumer "
                "token",
            )

    def require_provider(self, toolset: str) -> None:
        if self.role == "admin":
            return
        if self.role != "provider":
            raise RegistryError(
                "forbidden",
                f"token {self.name!r} has role {self.role!r}; this operation needs a provider "
                f"token for toolset {toolset!r}",
            )
        if toolset not in self.toolsets:
            raise RegistryError(
                "forbidden",
                f"provider token {self.name!r} may serve {sorted(self.toolsets)}, not toolset "
                f"{toolset!r}",
            )

    def require_any(self, toolset: str) -> None:
        """Consumers, admins, and the toolset's own providers."""
        if self.role == "provider":
            self.require_provider(toolset)


#: The principal of an open registry (no tokens configured: loopback only).
LOCAL = Principal("local", "admin")


class TokenTable:
    def __init__(self, entries: Iterable[tuple[str, Principal]] = ()) -> None:
        self._by_digest: dict[str, Principal] = {}
        for digest, principal in entries:
            if digest in self._by_digest:
                raise AuthConfigError(
                    f"token of {principal.name!r} is the same as that of "
                    f"{self._by_digest[digest].name!r}; every token must be distinct"
                )
            self._by_digest[digest] = principal

    @property
    def empty(self) -> bool:
        return not self._by_digest

    @classmethod
    def from_json(cls, data: Any, where: str) -> TokenTable:
        if not isinstance(data, Mapping) or not isinstance(data.get("tokens"), list):
            raise AuthConfigError(f'{where}: expected {{"tokens": [...]}}')
        entries = []
        for number, item in enumerate(data["tokens"], start=1):
            at = f"{where}: token {number}"
            if not isinstance(item, Mapping):
                raise AuthConfigError(f"{at}: expected an object")
            unknown = set(item) - {"name", "role", "toolsets", "token", "sha256"}
            if unknown:
                raise AuthConfigError(f"{at}: unknown field(s) {sorted(unknown)}")
            name = item.get("name") or f"token {number}"
            at = f"{where}: token {name!r}"
            role = item.get("role")
            if role not in _ROLES:
                raise AuthConfigError(f"{at}: role must be one of {_ROLES}, got {role!r}")
            toolsets = item.get("toolsets", [])
            if not isinstance(toolsets, list) or not all(isinstance(t, str) for t in toolsets):
                raise AuthConfigError(f"{at}: toolsets must be a list of toolset names")
            if role == "provider" and not toolsets:
                raise AuthConfigError(f"{at}: a provider token names the toolsets it serves")
            if role != "provider" and toolsets:
                raise AuthConfigError(f"{at}: only provider tokens name toolsets")
            digest = _digest_of(item, at)
            entries.append((digest, Principal(str(name), role, frozenset(toolsets))))
        return cls(entries)

    @classmethod
    def from_file(cls, path: str | Path) -> TokenTable:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise AuthConfigError(f"cannot read registry tokens from {path}: {exc}") from None
        return cls.from_json(data, str(path))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> TokenTable:
        """Tokens from ``AGENTGEN_REGISTRY_TOKENS`` (JSON) or ``AGENTGEN_REGISTRY_TOKENS_FILE``
        (a path); none configured gives an empty table. Both set is refused: one would be
        ignored without a word (tokens rotated in it would stay valid)."""
        environ = os.environ if environ is None else environ
        if environ.get(ENV_TOKENS_FILE) and environ.get(ENV_TOKENS, "").strip():
            raise AuthConfigError(
                f"both {ENV_TOKENS} and {ENV_TOKENS_FILE} are set: set only one (the tokens "
                "themselves, or the path of their file)"
            )
        if environ.get(ENV_TOKENS_FILE):
            return cls.from_file(environ[ENV_TOKENS_FILE])
        text = environ.get(ENV_TOKENS, "").strip()
        if not text:
            return cls()
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise AuthConfigError(f"{ENV_TOKENS} is not JSON: {exc}") from None
        return cls.from_json(data, ENV_TOKENS)

    def authenticate(self, authorization: str | None) -> Principal:
        if self.empty:
            return LOCAL
        if not authorization:
            raise RegistryError(
                "unauthenticated", "this registry requires 'Authorization: Bearer <token>'"
            )
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise RegistryError(
                "unauthenticated", "the Authorization header must be 'Bearer <token>'"
            )
        digest = hashlib.sha256(token.strip().encode()).hexdigest()
        for known, principal in self._by_digest.items():
            if hmac.compare_digest(known, digest):
                return principal
        raise RegistryError("unauthenticated", "unknown or revoked registry token")


def _digest_of(item: Mapping[str, Any], at: str) -> str:
    token, sha = item.get("token"), item.get("sha256")
    if (token is None) == (sha is None):
        raise AuthConfigError(f"{at}: give exactly one of token or sha256")
    if token is not None:
        if not isinstance(token, str) or len(token) < MIN_TOKEN_LENGTH:
            raise AuthConfigError(f"{at}: a token has at least {MIN_TOKEN_LENGTH} characters")
        return hashlib.sha256(token.encode()).hexdigest()
    if not isinstance(sha, str) or len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
        raise AuthConfigError(f"{at}: sha256 must be 64 lowercase hex digits")
    return sha


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the registry on this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
