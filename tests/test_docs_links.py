"""The docs a newcomer reads hold together: every relative link in README.md and docs/*.md
reaches a file (and, with ``#anchor``, a heading of that file), the README stays short, and it
shows the set-up and test commands that `.ci/run` runs verbatim."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
PAGES = [README, REPO / "benchmarks" / "README.md", *DOCS]

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def prose(text: str) -> str:
    """The text outside code blocks and inline code, where a Markdown link is a link."""
    return _CODE.sub("", _FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation but ``-`` and ``_``
    dropped, spaces to hyphens (``Read-only `RDQN_HOME` `` -> ``read-only-rdqn_home``)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"[`*]", "", text).lower()
    text = "".join(ch for ch in text if ch.isalnum() or ch in " -_")
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor in a Markdown file; repeated headings get -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for heading in _HEADING.findall(_FENCE.sub("", path.read_text(encoding="utf-8"))):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path: Path) -> list[str]:
    return _LINK.findall(prose(path.read_text(encoding="utf-8")))


def test_slug_follows_github() -> None:
    assert slug("The Compare page's default: `chain-lesson`") == (
        "the-compare-pages-default-chain-lesson"
    )
    assert slug("Running a class on a LAN") == "running-a-class-on-a-lan"
    assert slug("Read-only `RDQN_HOME`") == "read-only-rdqn_home"


def test_links_are_found_outside_code() -> None:
    text = "[a](x.md) `[b](y.md)` ![c](z.png)\n```\n[d](w.md)\n```\n"
    assert _LINK.findall(prose(text)) == ["x.md", "z.png"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        file = (page.parent / file_part).resolve() if file_part else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading with this anchor in {file.name}")
    assert not broken, f"{page.relative_to(REPO)}: " + "; ".join(broken)


def test_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; move details to docs/"


def test_readme_shows_what_ci_runs() -> None:
    """`.ci/run` runs the README's set-up line and test command verbatim: they must be there,
    each a line of the README's own."""
    readme = README.read_text(encoding="utf-8").splitlines()
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    setup = next(line for line in ci if line.startswith("python -m venv .venv"))
    assert setup in readme
    assert "python -m pytest" in ci and "python -m pytest" in readme
    assert 'python -m pytest -m "not browser and not slow"' in readme
