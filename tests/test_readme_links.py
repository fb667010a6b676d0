"""README.md stays a ten-minute read that points into docs/: every relative
link and ``#anchor`` in README.md and docs/*.md resolves (anchors by GitHub's heading slugs),
README is at most 420 lines and 2,500 words, its first screen says what dp-arena is for, every
docs file is linked from it, and the blocks other checks
read (the quickstart's test command that ``.ci/run`` runs, README's Python API example, the
plugin example in docs/mechanisms.md) are where those checks look for them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MAX_README_LINES = 420
MAX_README_WORDS = 2500

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"(?<!!)\[([^\]\n]*)\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.MULTILINE)


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: link text kept, lowercase, every character that is
    not a letter, digit, space, hyphen or underscore dropped, spaces turned into hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def prose(text: str) -> str:
    """Markdown without fenced code blocks and inline code (links there are not links)."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file, duplicates numbered as GitHub does (-1, -2)."""
    seen: dict[str, int] = {}
    found = set()
    for _, title in HEADING.findall(FENCE.sub("", path.read_text())):
        slug = github_slug(title)
        count = seen.get(slug, 0)
        found.add(slug if count == 0 else f"{slug}-{count}")
        seen[slug] = count + 1
    return found


def relative_links(path: Path) -> list[str]:
    """Targets of the file's links that are not absolute URLs (http:, mailto:, ...)."""
    return [target for _, target in LINK.findall(prose(path.read_text()))
            if not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target)]


def broken_links(path: Path) -> list[str]:
    """Each relative link of ``path`` whose file, or whose heading anchor, does not exist."""
    broken = []
    for target in relative_links(path):
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            broken.append(f"{target} (no file {dest})")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target} (no heading #{anchor} in {dest.name})")
    return broken


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def test_slugs_follow_githubs_rules_by_hand():
    assert github_slug("Your own table in two commands (`dp-arena-schema`)") == \
        "your-own-table-in-two-commands-dp-arena-schema"
    assert github_slug("Structure report and scoring years (`taxi_sim`)") == \
        "structure-report-and-scoring-years-taxi_sim"
    assert github_slug("Auditing a mechanism's privacy (`dp-arena-audit`)") == \
        "auditing-a-mechanisms-privacy-dp-arena-audit"
    assert github_slug("What a run writes, and who may read it") == \
        "what-a-run-writes-and-who-may-read-it"


def test_the_checker_finds_a_broken_file_a_broken_anchor_and_skips_code(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Title\n\n## A section (`x`)\n\n## A section (`x`)\n")
    page.write_text("# Page\n\n[ok](other.md#a-section-x) [dup](other.md#a-section-x-1) "
                    "[self](#page) [web](https://example.org/x.md)\n"
                    "[gone](missing.md) [bad](other.md#nope) [bad self](#nope)\n"
                    "`[code](missing2.md)`\n\n```\n[fenced](missing3.md)\n```\n")
    assert relative_links(page) == ["other.md#a-section-x", "other.md#a-section-x-1", "#page",
                                    "missing.md", "other.md#nope", "#nope"]
    assert [b.split(" ")[0] for b in broken_links(page)] == ["missing.md", "other.md#nope",
                                                             "#nope"]


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path):
    assert broken_links(path) == []


def test_readme_is_short():
    lines = README.read_text().count("\n")
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines: move detail to docs/"


def test_every_docs_file_is_linked_from_the_readme():
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in relative_links(README)}
    unlinked = [p.name for p in sorted(DOCS.glob("*.md")) if p.resolve() not in linked]
    assert unlinked == [], f"link {unlinked} from README's Further reading"


def test_ci_runs_the_readmes_test_command_verbatim():
    """.ci/run says it runs README's test command verbatim: the same line, in the Quickstart."""
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.startswith("python3.11 -m venv")]
    text = README.read_text()
    quickstart = text[text.index("## Quickstart"):text.index("\n## ", text.index("## Quickstart"))]
    assert len(ci) == 1 and ci[0] in quickstart.splitlines()


def test_readme_is_a_ten_minute_read():
    """At most 2,500 words as ``wc -w`` counts them (runs of non-white space)."""
    words = len(README.read_text().split())
    assert words <= MAX_README_WORDS, f"README.md has {words} words: move detail to docs/"


def test_the_first_screen_says_what_dp_arena_is_for():
    """The first 25 lines say what a user does with it (pick a synthesizer for a table, at a
    budget, with evidence) and hold the Quickstart's two commands; its prose fits 80 columns."""
    lines = README.read_text().splitlines()[:25]
    screen = " ".join(lines).lower()
    for words in ("synthesizer", "table", "budget", "evidence", "confidence intervals"):
        assert words in screen, words
    assert sum(line.startswith("python3.11 -m venv") for line in lines) == 2
    wide = [line for line in lines if len(line) > 80 and not line.startswith("python3.11")]
    assert wide == []


def test_the_examples_other_tests_run_are_where_they_look():
    """tests/test_notebook.py runs README's first python block calling run_competition;
    tests/test_readme_plugin.py the python block of docs/mechanisms.md's "Adding a mechanism",
    which README's "Adding a mechanism" links to."""
    text = README.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    assert any("run_competition(" in b for b in blocks)
    section = text[text.index("## Adding a mechanism"):text.index("## Adding a metric")]
    assert "docs/mechanisms.md#adding-a-mechanism" in section
    page = (DOCS / "mechanisms.md").read_text()
    section = page[page.index("## Adding a mechanism"):page.index("## Your own contestant")]
    example = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    assert 'MECHANISMS["noisy_histogram"]' in example and "release.laplace(" in example
