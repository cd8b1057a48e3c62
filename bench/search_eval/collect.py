"""Collects `catalog.json` of the search evaluation set from real MCP servers.

Every source is an openly licensed MCP server published on npm or PyPI, pinned to an exact
version below. The script installs each one into a scratch folder outside the repository,
starts it over stdio with dummy credentials, asks it for its tools (`initialize`, then
`tools/list` until no `nextCursor` is left) and writes every tool verbatim:

    {"name": "<toolset>.<tool>", "description": ..., "parameters": <inputSchema>,
     "source": "npm:<package>@<version>" | "pypi:<package>==<version>"}

sorted by name. Nothing is rewritten: the description and the input schema are what the server
answered. Run from the repository root:

    python bench/search_eval/collect.py install --scratch /tmp/agentgen-search-eval
    python bench/search_eval/collect.py collect --scratch /tmp/agentgen-search-eval

`install` needs node/npm, python3 with venv, and (for @azure-devops/mcp, whose keytar
dependency is a native addon) Debian's `libsecret-1-dev`. `collect` needs no network: servers
that try to reach theirs at start-up (telemetry, update checks) fail that quietly.
`python bench/search_eval/collect.py table --scratch ...` prints the README's sources table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

HERE = Path(__file__).resolve().parent
CATALOG = HERE / "catalog.json"
PROTOCOL_VERSION = "2025-06-18"
LIST_TIMEOUT_S = 180.0
TOOLSET_RE = re.compile(r"^[a-z][a-z0-9]*$")

Registry = Literal["npm", "pypi"]


@dataclass(frozen=True)
class Source:
    """One MCP server package; `args` and `env` values may use `{work}` (a scratch folder)."""

    toolset: str
    registry: Registry
    package: str
    version: str
    license: str
    executable: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def source_id(self) -> str:
        if self.registry == "npm":
            return f"npm:{self.package}@{self.version}"
        return f"pypi:{self.package}=={self.version}"


def npm(
    toolset: str, spec: str, license: str, command: str, env: Mapping[str, str] | None = None
) -> Source:
    """`spec` is `package@version`; `command` is the package's executable and its arguments."""
    package, version = spec.rsplit("@", 1)
    executable, *args = shlex.split(command)
    return Source(toolset, "npm", package, version, license, executable, tuple(args), env or {})


def pypi(
    toolset: str, spec: str, license: str, command: str, env: Mapping[str, str] | None = None
) -> Source:
    """`spec` is `package==version`; `command` is the package's executable and its arguments."""
    package, version = spec.split("==")
    executable, *args = shlex.split(command)
    return Source(toolset, "pypi", package, version, license, executable, tuple(args), env or {})


MCP_REF = "MIT (README; package.json says SEE LICENSE IN LICENSE)"
AWS_ENV = {
    "AWS_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "AKIAEXAMPLEDUMMY",
    "AWS_SECRET_ACCESS_KEY": "dummy",
    "AWS_EC2_METADATA_DISABLED": "true",
}
ATLASSIAN_ENV = {
    "JIRA_URL": "https://example.atlassian.net",
    "JIRA_USERNAME": "user@example.com",
    "JIRA_API_TOKEN": "dummy",
    "CONFLUENCE_URL": "https://example.atlassian.net/wiki",
    "CONFLUENCE_USERNAME": "user@example.com",
    "CONFLUENCE_API_TOKEN": "dummy",
}
SUPABASE_FEATURES = "account,database,debugging,development,functions,branching,storage"

SOURCES: tuple[Source, ...] = (
    # The reference servers of the Model Context Protocol project.
    npm(
        "filesystem",
        "@modelcontextprotocol/server-filesystem@2026.8.31",
        MCP_REF,
        "mcp-server-filesystem {work}/files",
    ),
    npm(
        "github",
        "@modelcontextprotocol/server-github@2025.4.8",
        "MIT",
        "mcp-server-github",
        {"GITHUB_PERSONAL_ACCESS_TOKEN": "dummy"},
    ),
    # @modelcontextprotocol/server-gitlab@2025.4.25 (its only version) is left out: every input
    # schema it publishes is empty ({"$schema": ...} and nothing else). `gitlab` is
    # @zereight/mcp-gitlab below.
    npm(
        "memory",
        "@modelcontextprotocol/server-memory@2026.8.31",
        MCP_REF,
        "mcp-server-memory",
        {"MEMORY_FILE_PATH": "{work}/memory.jsonl"},
    ),
    npm(
        "everything",
        "@modelcontextprotocol/server-everything@2026.8.31",
        MCP_REF,
        "mcp-server-everything stdio",
    ),
    npm(
        "slack",
        "@modelcontextprotocol/server-slack@2025.4.25",
        "MIT",
        "mcp-server-slack",
        {"SLACK_BOT_TOKEN": "xoxb-dummy", "SLACK_TEAM_ID": "T00000000"},
    ),
    npm(
        "googlemaps",
        "@modelcontextprotocol/server-google-maps@0.6.2",
        "MIT",
        "mcp-server-google-maps",
        {"GOOGLE_MAPS_API_KEY": "dummy"},
    ),
    npm(
        "puppeteer",
        "@modelcontextprotocol/server-puppeteer@2025.5.12",
        "MIT",
        "mcp-server-puppeteer",
    ),
    npm(
        "postgres",
        "@modelcontextprotocol/server-postgres@0.6.2",
        "MIT",
        "mcp-server-postgres postgresql://localhost/eval",
    ),
    npm(
        "brave",
        "@modelcontextprotocol/server-brave-search@0.6.2",
        "MIT",
        "mcp-server-brave-search",
        {"BRAVE_API_KEY": "dummy"},
    ),
    npm(
        "thinking",
        "@modelcontextprotocol/server-sequential-thinking@2026.8.31",
        MCP_REF,
        "mcp-server-sequential-thinking",
    ),
    pypi("git", "mcp-server-git==2026.10.19", "MIT", "mcp-server-git --repository {work}/repo"),
    pypi("fetch", "mcp-server-fetch==2026.10.24", "MIT", "mcp-server-fetch"),
    pypi("time", "mcp-server-time==2026.10.19", "MIT", "mcp-server-time --local-timezone UTC"),
    # Vendors' and community servers.
    npm("playwright", "@playwright/mcp@0.0.83", "Apache-2.0", "playwright-mcp"),
    npm("chromedevtools", "chrome-devtools-mcp@1.11.0", "Apache-2.0", "chrome-devtools-mcp"),
    npm(
        "notion",
        "@notionhq/notion-mcp-server@2.5.2",
        "MIT",
        "notion-mcp-server",
        {"NOTION_TOKEN": "dummy"},
    ),
    # 0.3.x only forwards to Stripe's hosted server; 0.2.5 serves @stripe/agent-toolkit locally.
    npm("stripe", "@stripe/mcp@0.2.5", "MIT", "mcp --tools=all --api-key=sk_test_dummy"),
    # The `docs` feature loads a GraphQL schema from Supabase at start-up: it is left out.
    npm(
        "supabase",
        "@supabase/mcp-server-supabase@0.13.0",
        "Apache-2.0",
        f"mcp-server-supabase --access-token=dummy --features={SUPABASE_FEATURES}",
    ),
    npm("k8s", "mcp-server-kubernetes@4.1.7", "MIT", "mcp-server-kubernetes"),
    npm(
        "hubspot",
        "@hubspot/mcp-server@0.4.0",
        "MIT",
        "mcp-hubspot",
        {"PRIVATE_APP_ACCESS_TOKEN": "dummy"},
    ),
    npm(
        "firecrawl",
        "firecrawl-mcp@3.26.0",
        "MIT",
        "firecrawl-mcp",
        {"FIRECRAWL_API_KEY": "fc-dummy"},
    ),
    npm(
        "circleci",
        "@circleci/mcp-server-circleci@0.20.0",
        "Apache-2.0",
        "mcp-server-circleci",
        {"CIRCLECI_TOKEN": "dummy"},
    ),
    npm(
        "mongodb",
        "mongodb-mcp-server@3.0.4",
        "Apache-2.0",
        "mongodb-mcp-server",
        {"MDB_MCP_TELEMETRY": "disabled"},
    ),
    npm(
        "gitlab",
        "@zereight/mcp-gitlab@2.1.64",
        "MIT",
        "mcp-gitlab",
        {"GITLAB_PERSONAL_ACCESS_TOKEN": "dummy"},
    ),
    npm(
        "shortcut",
        "@shortcut/mcp@0.25.0",
        "MIT",
        "mcp-server-shortcut",
        {"SHORTCUT_API_TOKEN": "dummy"},
    ),
    npm(
        "azdo",
        "@azure-devops/mcp@2.10.0",
        "MIT",
        "mcp-server-azuredevops contoso --authentication envvar",
        {"ADO_MCP_AUTH_TOKEN": "dummy"},
    ),
    npm(
        "datadog",
        "@winor30/mcp-server-datadog@1.8.0",
        "Apache-2.0 (LICENSE file)",
        "mcp-server-datadog",
        {"DATADOG_API_KEY": "dummy", "DATADOG_APP_KEY": "dummy"},
    ),
    # @wonderwhy-er/desktop-commander is left out: its descriptions embed the host it runs on
    # (operating system, container type, the host's mount points), so they are not the package's.
    npm(
        "gcal",
        "@cocal/google-calendar-mcp@2.6.3",
        "MIT",
        "google-calendar-mcp",
        {"GOOGLE_OAUTH_CREDENTIALS": "{work}/gcp-oauth.keys.json"},
    ),
    npm(
        "gmail",
        "@gongrzhe/server-gmail-autoauth-mcp@1.1.11",
        "ISC",
        "gmail-mcp",
        {
            "GMAIL_OAUTH_PATH": "{work}/gcp-oauth.keys.json",
            "GMAIL_CREDENTIALS_PATH": "{work}/gmail-credentials.json",
        },
    ),
    npm("tavily", "tavily-mcp@0.2.22", "MIT", "tavily-mcp", {"TAVILY_API_KEY": "tvly-dummy"}),
    npm(
        "exa",
        "exa-mcp-server@3.4.1",
        "MIT (LICENSE file)",
        "exa-mcp-server",
        {"EXA_API_KEY": "dummy"},
    ),
    npm("launchdarkly", "@launchdarkly/mcp-server@0.6.2", "MIT", "mcp start --api-key dummy"),
    npm("antv", "@antv/mcp-server-chart@0.9.10", "MIT", "mcp-server-chart"),
    # IMAGE_DIR is named in a tool description: a fixed path keeps it the same on every machine.
    npm(
        "figma",
        "figma-developer-mcp@0.13.2",
        "MIT",
        "figma-developer-mcp --stdio",
        {"FIGMA_API_KEY": "dummy", "IMAGE_DIR": "/figma-images", "FRAMELINK_TELEMETRY": "off"},
    ),
    npm("context7", "@upstash/context7-mcp@4.1.1", "MIT", "context7-mcp"),
    pypi(
        "atlassian", "mcp-atlassian==0.23.1", "MIT (LICENSE file)", "mcp-atlassian", ATLASSIAN_ENV
    ),
    pypi(
        "grafana",
        "mcp-grafana==2.1.1",
        "Apache-2.0",
        "mcp-grafana",
        {"GRAFANA_URL": "http://localhost:3000", "GRAFANA_API_KEY": "dummy"},
    ),
    pypi(
        "eks",
        "awslabs.eks-mcp-server==0.2.1",
        "Apache-2.0",
        "awslabs.eks-mcp-server --allow-write --allow-sensitive-data-access",
        AWS_ENV,
    ),
    pypi(
        "cloudwatch",
        "awslabs.cloudwatch-mcp-server==0.3.1",
        "Apache-2.0",
        "awslabs.cloudwatch-mcp-server",
        AWS_ENV,
    ),
    pypi(
        "awsdocs",
        "awslabs.aws-documentation-mcp-server==1.2.3",
        "Apache-2.0",
        "awslabs.aws-documentation-mcp-server",
        AWS_ENV,
    ),
    pypi("excel", "excel-mcp-server==2.2.2", "MIT", "excel-mcp-server stdio"),
    pypi("word", "office-word-mcp-server==1.1.11", "MIT", "word_mcp_server"),
)


class ServerError(RuntimeError):
    pass


# --------------------------------------------------------------------------------------------
# Installing


def package_dir(scratch: Path, source: Source) -> Path:
    return scratch / source.registry / source.toolset


def install(scratch: Path, sources: Sequence[Source]) -> None:
    env = dict(os.environ)
    # Servers never need a browser to list their tools; no install step may download one.
    env.update(
        PUPPETEER_SKIP_DOWNLOAD="1",
        PUPPETEER_SKIP_CHROMIUM_DOWNLOAD="1",
        PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD="1",
    )
    for source in sources:
        folder = package_dir(scratch, source)
        folder.mkdir(parents=True, exist_ok=True)
        print(f"installing {source.source_id} into {folder}", flush=True)
        if source.registry == "npm":
            (folder / "package.json").write_text('{"name": "scratch", "private": true}\n')
            spec = f"{source.package}@{source.version}"
            run(["npm", "install", "--no-audit", "--no-fund", spec], folder, env)
        else:
            if not (folder / "bin" / "python").exists():
                run([sys.executable, "-m", "venv", str(folder)], folder, env)
            spec = f"{source.package}=={source.version}"
            run([str(folder / "bin" / "pip"), "install", "-q", spec], folder, env)


def run(command: Sequence[str], cwd: Path, env: Mapping[str, str]) -> None:
    subprocess.run(command, cwd=cwd, env=env, check=True)


def installed_metadata(scratch: Path, source: Source) -> tuple[str, str]:
    """The installed version and license field, read from the installed package itself."""
    folder = package_dir(scratch, source)
    if source.registry == "npm":
        manifest = folder / "node_modules" / source.package / "package.json"
        data = json.loads(manifest.read_text())
        return str(data.get("version", "")), str(data.get("license", ""))
    pip = folder / "bin" / "pip"
    shown = subprocess.run(
        [str(pip), "show", source.package], capture_output=True, text=True, check=True
    ).stdout
    fields = dict(line.split(": ", 1) for line in shown.splitlines() if ": " in line)
    return fields.get("Version", ""), fields.get("License-Expression") or fields.get("License", "")


# --------------------------------------------------------------------------------------------
# Listing tools over stdio


def prepare_work(work: Path) -> None:
    """The files the servers are pointed at: an allowed folder, a git repo, dummy OAuth keys."""
    (work / "files").mkdir(parents=True, exist_ok=True)
    repo = work / "repo"
    if not (repo / ".git").exists():
        repo.mkdir(exist_ok=True)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    keys = {
        "installed": {
            "client_id": "dummy.apps.googleusercontent.com",
            "client_secret": "dummy",
            "redirect_uris": ["http://localhost"],
        }
    }
    (work / "gcp-oauth.keys.json").write_text(json.dumps(keys))
    token = {
        "access_token": "dummy",
        "refresh_token": "dummy",
        "token_type": "Bearer",
        "expiry_date": 9_999_999_999_999,
    }
    (work / "gmail-credentials.json").write_text(json.dumps(token))


def server_command(scratch: Path, source: Source, work: Path) -> list[str]:
    folder = package_dir(scratch, source)
    if source.registry == "npm":
        executable = folder / "node_modules" / ".bin" / source.executable
    else:
        executable = folder / "bin" / source.executable
    return [str(executable), *(arg.replace("{work}", str(work)) for arg in source.args)]


def server_env(source: Source, work: Path, home: Path) -> dict[str, str]:
    """A small environment: no credentials of this machine reach a server, only dummies."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TZ": "UTC",
        "DO_NOT_TRACK": "1",
        "NO_COLOR": "1",
        # mcp-atlassian joins a Python set into a default value: fix the set's order.
        "PYTHONHASHSEED": "0",
    }
    env.update({key: value.replace("{work}", str(work)) for key, value in source.env.items()})
    return env


class StdioSession:
    """Newline-delimited JSON-RPC with one server process (the MCP stdio transport)."""

    def __init__(self, command: Sequence[str], env: Mapping[str, str], cwd: Path, log: Path):
        self._log = log.open("ab")
        self._process = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=dict(env),
            cwd=cwd,
        )
        self._buffer = b""
        self._next_id = 0

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=3)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()
        self._log.close()

    def send(self, message: dict[str, Any]) -> None:
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(message).encode() + b"\n")
        self._process.stdin.flush()

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def request(self, method: str, params: dict[str, Any], deadline: float) -> dict[str, Any]:
        self._next_id += 1
        request_id = self._next_id
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            message = self._receive(deadline)
            if message.get("id") == request_id and "method" not in message:
                if "error" in message:
                    raise ServerError(f"{method}: {message['error']}")
                result = message.get("result")
                if not isinstance(result, dict):
                    raise ServerError(f"{method}: result is not an object")
                return result
            if "method" in message and "id" in message:
                # A request from the server (roots, sampling, ...): this client offers none.
                self.send(
                    {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "error": {"code": -32601, "message": "Method not found"},
                    }
                )

    def _receive(self, deadline: float) -> dict[str, Any]:
        stdout = self._process.stdout
        assert stdout is not None
        while True:
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                try:
                    message = json.loads(line)
                except ValueError:
                    continue  # a server that logs to stdout (office-word-mcp-server does)
                if isinstance(message, dict):
                    return message
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ServerError("timed out")
            ready, _, _ = select.select([stdout], [], [], min(remaining, 1.0))
            if ready:
                chunk = os.read(stdout.fileno(), 1 << 20)
                if not chunk:
                    raise ServerError(f"server exited with {self._process.poll()}")
                self._buffer += chunk


def list_tools(scratch: Path, source: Source, work: Path) -> list[dict[str, Any]]:
    home = work / "home" / source.toolset
    home.mkdir(parents=True, exist_ok=True)
    cwd = work / "cwd" / source.toolset
    cwd.mkdir(parents=True, exist_ok=True)
    session = StdioSession(
        server_command(scratch, source, work),
        server_env(source, work, home),
        cwd,
        work / f"{source.toolset}.stderr.log",
    )
    deadline = time.monotonic() + LIST_TIMEOUT_S
    try:
        session.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "agentgen-search-eval", "version": "1"},
            },
            deadline,
        )
        session.notify("notifications/initialized")
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {} if cursor is None else {"cursor": cursor}
            result = session.request("tools/list", params, deadline)
            tools.extend(result["tools"])
            next_cursor = result.get("nextCursor")
            if not next_cursor:
                return tools
            cursor = str(next_cursor)
    finally:
        session.close()


def catalog_entries(source: Source, tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    entries = []
    for tool in tools:
        schema = tool.get("inputSchema")
        if not isinstance(schema, dict):
            raise ServerError(f"{source.toolset}.{tool.get('name')}: no input schema")
        entries.append(
            {
                "name": f"{source.toolset}.{tool['name']}",
                "description": tool.get("description") or "",
                "parameters": schema,
                "source": source.source_id,
            }
        )
    return entries


def collect(scratch: Path, sources: Sequence[Source], out: Path) -> None:
    work = scratch / "work"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    prepare_work(work)
    catalog: list[dict[str, Any]] = []
    failures: list[str] = []
    for source in sources:
        version, _license = installed_metadata(scratch, source)
        if version != source.version:
            failures.append(f"{source.source_id}: installed version is {version!r}")
            continue
        try:
            tools = list_tools(scratch, source, work)
        except (ServerError, OSError) as error:
            failures.append(f"{source.source_id}: {error}")
            continue
        print(f"{source.toolset:16} {len(tools):4} tools  {source.source_id}", flush=True)
        catalog.extend(catalog_entries(source, tools))
    if failures:
        raise SystemExit("no catalog written:\n  " + "\n  ".join(failures))
    names = [entry["name"] for entry in catalog]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise SystemExit(f"duplicate tool names: {duplicates}")
    catalog.sort(key=lambda entry: str(entry["name"]))
    out.write_text(json.dumps(catalog, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(catalog)} tools from {len(sources)} sources written to {out}")


def table(scratch: Path, sources: Sequence[Source], catalog_path: Path) -> None:
    """The README's sources table: pinned versions, the license checked, tools per source."""
    catalog = json.loads(catalog_path.read_text())
    counts: dict[str, int] = {}
    for entry in catalog:
        counts[entry["source"]] = counts.get(entry["source"], 0) + 1
    print("| toolset | package | registry | version | license | tools |")
    print("| --- | --- | --- | --- | --- | ---: |")
    for source in sorted(sources, key=lambda s: s.toolset):
        installed_version, installed_license = installed_metadata(scratch, source)
        assert installed_version == source.version, source.source_id
        print(
            f"| `{source.toolset}` | `{source.package}` | {source.registry} | {source.version} "
            f"| {source.license} | {counts.get(source.source_id, 0)} |"
        )
        spdx = source.license.split()[0]
        if installed_license and spdx not in installed_license:
            print(f"  (installed metadata says license {installed_license!r})", file=sys.stderr)
    print(f"| | **total** | | | | **{len(catalog)}** |")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("command", choices=["install", "collect", "table"])
    parser.add_argument("--scratch", type=Path, required=True, help="a folder outside the repo")
    parser.add_argument("--only", default="", help="comma-separated toolsets (default: all)")
    parser.add_argument("--out", type=Path, default=CATALOG)
    options = parser.parse_args(argv)
    for source in SOURCES:
        if not TOOLSET_RE.match(source.toolset):
            raise SystemExit(f"bad toolset slug {source.toolset!r}")
    wanted = {name for name in options.only.split(",") if name}
    sources = [s for s in SOURCES if not wanted or s.toolset in wanted]
    scratch = options.scratch.resolve()
    if scratch.is_relative_to(HERE.parents[1]):
        raise SystemExit("--scratch must be outside the repository")
    if options.command == "install":
        install(scratch, sources)
    elif options.command == "collect":
        collect(scratch, sources, options.out)
    else:
        table(scratch, sources, options.out)


if __name__ == "__main__":
    main()
