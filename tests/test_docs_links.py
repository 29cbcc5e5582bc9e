"""The user documentation holds together: README.md stays short, and every relative link and image in
README.md and docs/*.md points at a file of the checkout (and, with a ``#anchor`` into a Markdown file,
at a heading that exists there, named by GitHub's rules).  No network: external links are not followed."""

from __future__ import annotations

import pathlib
import re
import urllib.parse

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
README_MAX_LINES = 250
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [ROOT / "README.md", *DOCS]

FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
#: [text](target) and ![alt](target), with an optional "title"; the text may hold `code` but no brackets
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HTML_TARGET = re.compile(r"<(?:img|a|source)\b[^>]*?\b(?:src|href)\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)
HTML_ANCHOR = re.compile(r"<a\b[^>]*?\b(?:id|name)\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the lines that are not code: fenced blocks and indented code blocks are left
    out (an indented line counts as code when it follows a blank line or another code line)."""
    kept, fence, previous_blank, in_indented = [], None, True, False
    for number, line in enumerate(text.splitlines(), 1):
        opened = FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            continue
        blank = not line.strip()
        indented = line.startswith("    ") or line.startswith("\t")
        if indented and not blank and (previous_blank or in_indented):
            in_indented = True
            continue
        if not blank:
            in_indented = False
        previous_blank = blank
        kept.append((number, line))
    return kept


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: the text as rendered (links as their text, no code marks), lowercase,
    punctuation removed except hyphens and underscores, each space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: pathlib.Path) -> set[str]:
    """Every anchor a Markdown file offers: its headings' slugs (a repeated one gets -1, -2, ...) and HTML ids."""
    found, seen = set(), {}
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        heading = HEADING.match(line)
        if heading:
            base = slug(heading.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
        found.update(HTML_ANCHOR.findall(line))
    return found


def links(path: pathlib.Path) -> list[tuple[int, str]]:
    """(line number, target) of every link, image and reference definition outside code."""
    found = []
    for number, line in prose_lines(path.read_text(encoding="utf-8")):
        definition = REFERENCE_DEFINITION.match(line)
        if definition:
            found.append((number, definition.group(1)))
            continue
        bare = INLINE_CODE.sub(lambda match: " " * len(match.group(0)), line)
        found.extend((number, target) for target in INLINE_LINK.findall(bare))
        found.extend((number, target) for target in HTML_TARGET.findall(bare))
    return found


def broken_links(path: pathlib.Path, root: pathlib.Path = ROOT) -> list[str]:
    """Each relative link of ``path`` that leads nowhere, as 'file:line: target (why)'."""
    problems = []
    where = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
    for number, target in links(path):
        if not target:
            problems.append(f"{where}:{number}: (empty link)")
            continue
        if SCHEME.match(target) or target.startswith("//"):
            continue  # external: http(s), mailto, ...
        file_part, _, anchor = target.partition("#")
        file_part = urllib.parse.unquote(file_part)
        destination = (path.parent / file_part).resolve() if file_part else path.resolve()
        if file_part.startswith("/") or not destination.is_relative_to(root.resolve()):
            problems.append(f"{where}:{number}: {target} (outside the repository)")
            continue
        if not destination.exists():
            problems.append(f"{where}:{number}: {target} (no such file)")
            continue
        if anchor and destination.suffix.lower() == ".md":
            if urllib.parse.unquote(anchor).lower() not in anchors(destination):
                problems.append(f"{where}:{number}: {target} (no heading #{anchor} in {destination.name})")
    return problems


def test_readme_is_at_most_250_lines():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, \
        f"README.md has {len(lines)} lines; keep it under {README_MAX_LINES} and move the rest to docs/"


def test_there_are_docs_pages():
    assert DOCS, "docs/*.md is empty"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_every_relative_link_and_image_resolves(page):
    assert broken_links(page) == []


def test_every_docs_page_is_linked_from_the_readme():
    linked = {(ROOT / urllib.parse.unquote(target.partition("#")[0])).resolve()
              for _, target in links(ROOT / "README.md") if not SCHEME.match(target)}
    assert [page.name for page in DOCS if page.resolve() not in linked] == []


def test_slugs_follow_githubs_rules():
    assert slug("Quality against the exact model (`omnivoice eval`)") == "quality-against-the-exact-model-omnivoice-eval"
    assert slug("Backbone choices: 8-bit, int4, fp32") == "backbone-choices-8-bit-int4-fp32"
    assert slug("Saved voices, voice names and languages") == "saved-voices-voice-names-and-languages"
    assert slug("Keys and [errors](x.md)") == "keys-and-errors"
    assert slug("snake_case and A/B") == "snake_case-and-ab"


def test_the_check_reports_planted_broken_links(tmp_path):
    """The check can fail: a missing file, a missing heading, a missing image and a link out of the
    repository are each reported with their line; good links, links inside code and external links are not."""
    (tmp_path / "other.md").write_text("# Other page\n\n## A section: with `code`\n\n## A section: with `code`\n")
    (tmp_path / "picture.png").write_bytes(b"\x89PNG")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n"                                                          # 1
        "\n"                                                                # 2
        "Good: [other](other.md), [its section](other.md#a-section-with-code), "
        "[the second one](other.md#a-section-with-code-1), [here](#page), ![pic](picture.png).\n"  # 3
        "Broken: [gone](missing.md) and [no heading](other.md#not-there).\n"  # 4
        "![missing picture](pictures/none.png) and [up](../../outside.md) [self](#nowhere)\n"  # 5
        "External: [site](https://example.com/x.md) and `[in code](missing-in-code.md)`.\n"  # 6
        "\n"                                                                # 7
        "```\n[fenced](missing-in-fence.md)\n```\n"                         # 8-10
        "\n"                                                                # 11
        "    [indented code](missing-indented.md)\n"                        # 12
        "\n"                                                                # 13
        "[ref]: missing-reference.md\n"                                     # 14
    )
    assert broken_links(page, root=tmp_path) == [
        "page.md:4: missing.md (no such file)",
        "page.md:4: other.md#not-there (no heading #not-there in other.md)",
        "page.md:5: pictures/none.png (no such file)",
        "page.md:5: ../../outside.md (outside the repository)",
        "page.md:5: #nowhere (no heading #nowhere in page.md)",
        "page.md:14: missing-reference.md (no such file)",
    ]
