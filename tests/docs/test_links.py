"""Every relative link of the repository's Markdown files resolves, and so does its #anchor.

A newcomer follows these links first; a renamed file or heading breaks them silently, since
nothing else reads them. Links are taken from the parsed document (markdown-it, CommonMark), so
text inside code spans and fences is not mistaken for a link; anchors are the heading slugs
GitHub renders (lower case, punctuation dropped, spaces to hyphens, ``-1``, ``-2`` for repeats).
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

ROOT = Path(__file__).resolve().parents[2]
PARSER = MarkdownIt("commonmark").enable("table")


def markdown_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [ROOT / name for name in listed]


def inline_tokens(tokens: list[Token]) -> Iterator[Token]:
    for token in tokens:
        yield token
        if token.children:
            yield from inline_tokens(token.children)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(document: Path) -> set[str]:
    tokens = PARSER.parse(document.read_text())
    seen: dict[str, int] = {}
    found: set[str] = set()
    for opening, inline in itertools.pairwise(tokens):
        if opening.type != "heading_open":
            continue
        text = "".join(
            child.content
            for child in inline.children or []
            if child.type in ("text", "code_inline")
        )
        base = slug(text)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    found.update(re.findall(r'<a (?:name|id)="([^"]+)"', document.read_text()))
    return found


def links(document: Path) -> list[str]:
    return [
        str(token.attrs["href"])
        for token in inline_tokens(PARSER.parse(document.read_text()))
        if token.type == "link_open"
    ]


def broken_links(document: Path) -> list[str]:
    broken = []
    for href in links(document):
        parts = urlsplit(href)
        if parts.scheme or parts.netloc:
            continue  # not relative: nothing here can check it offline
        target = (document.parent / unquote(parts.path)).resolve() if parts.path else document
        shown = os.path.relpath(target, ROOT)
        if not target.exists():
            broken.append(f"{href}: no file {shown}")
        elif parts.fragment and target.suffix == ".md" and parts.fragment not in anchors(target):
            broken.append(f"{href}: no heading #{parts.fragment} in {shown}")
    return broken


def test_the_repository_has_linked_documents() -> None:
    assert len(markdown_files()) >= 10
    assert sum(len(links(document)) for document in markdown_files()) >= 50


@pytest.mark.parametrize("document", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(document: Path) -> None:
    assert broken_links(document) == []


def test_a_missing_file_or_heading_is_reported(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text(
        "# Other\n\n## Set up `make` & run\n\n## Set up\n\n## Set up\n"
    )
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n## A heading\n\n"
        "[ok](#a-heading) [ok](other.md#set-up-make--run) [ok](other.md#set-up-1)\n"
        "[ok](https://example.com/#nowhere) `[code](missing.md)`\n\n"
        "[bad](missing.md) [bad](#no-such-heading) [bad](other.md#set-up-2)\n"
    )
    assert [problem.split(":")[0] for problem in broken_links(page)] == [
        "missing.md",
        "#no-such-heading",
        "other.md#set-up-2",
    ]
