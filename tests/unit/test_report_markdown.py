"""The index-summary Markdown artifact: paths and reasons from documents cannot break out."""
from __future__ import annotations

import html
import json
import re

from markdown_it import MarkdownIt

from citeline.schemas.status import Failure, RunSummary
from citeline.tasks.report import _markdown, failure_rows, retry_parameters

HOSTILE = Failure(
    path="a | b <img src=x onerror=alert(1)>.md",
    stage="extract",
    reason="corrupt: [click](http://evil.example) `code` *bold*\n| forged | row | here |\n<script>x</script>",
)


def _failure_rows(markdown: str) -> list[str]:
    lines = markdown.split("\n")
    start = lines.index("| path | stage | reason |") + 2
    return lines[start:]


def _cells(row: str) -> list[str]:
    """GFM splits a row at every pipe not escaped by a backslash."""
    return re.split(r"(?<!\\)\|", row.strip())[1:-1]


def test_a_hostile_path_and_reason_stay_one_row_of_three_cells():
    text = _markdown(RunSummary(failed=1, failures=(HOSTILE,)), "/docs")
    rows = _failure_rows(text)
    assert len(rows) == 1
    assert len(_cells(rows[0])) == 3


def test_no_html_or_markdown_link_survives():
    text = _markdown(RunSummary(failed=1, failures=(HOSTILE,)), "/docs")
    assert "<script" not in text and "<img" not in text
    assert "&lt;script&gt;" in text
    assert "[click](" not in text and "\\[click\\]\\(" in text


def test_a_root_with_a_backtick_cannot_end_its_heading():
    text = _markdown(RunSummary(), "/docs`<b>x</b>\n# forged")
    assert text.split("\n")[0] == "# Index run: /docs\\`&lt;b&gt;x&lt;/b&gt;\\\\n\\# forged"


BEACONS = Failure(
    path="![beacon](http://127.0.0.1:9/beacon-from-name.png) [Click here to retry](javascript:alert(1)).pdf",
    stage="extract",
    reason="parser-error: the file starts with ![](http://127.0.0.1:9/from-bytes) <img src=http://127.0.0.1:9/i>",
    source="/docs/![beacon](http://127.0.0.1:9/beacon-from-name.png).pdf",
)


def test_the_failed_documents_table_renders_no_link_or_image_and_its_parameters_stay_exact():
    """The table artifact's cells were raw; the Prefect UI renders each as
    Markdown, so a name or a reason fetched a URL (an image) or offered a live link."""
    (row,) = failure_rows(RunSummary(failed=1, failures=(BEACONS,)), "/data/index", "2026-01-01T00:00:00+00:00")
    render = MarkdownIt("commonmark").enable("table").render
    for key, cell in row.items():
        assert not re.search(r"<(a|img)\b", render(str(cell))), key
    shown = {key: html.unescape(re.sub(r"<[^>]+>", "", render(str(cell)))).strip() for key, cell in row.items()}
    assert shown["path"] == BEACONS.path and shown["reason"] == BEACONS.reason  # read as the text itself
    assert json.loads(shown["retry-failed/retry-failed parameters"]) == json.loads(
        retry_parameters("/data/index", BEACONS.source))  # still copyable, exact


def test_files_that_are_no_documents_are_listed_apart_from_failures_and_escaped():
    """The artifact counts and lists them, never as failures; a hostile name stays one cell."""
    from citeline.schemas.status import NotDocument

    summary = RunSummary(indexed=1, new=1, not_documents=(NotDocument("tool.py", "Python source"),
                                                           NotDocument("a | b <i>.zip", "a zip archive (.zip)")))
    markdown = _markdown(summary, "/docs")
    assert "In words: 1 new, 2 skipped as not documents." in markdown and "Failed documents" not in markdown
    lines = markdown.split("\n")
    rows = lines[lines.index("| path | what it is |") + 2:]
    assert [_cells(r) for r in rows] == [[" tool.py ", " Python source "],
                                         [" a \\| b &lt;i&gt;.zip ", " a zip archive \\(.zip\\) "]]
    assert _cells(lines[4])[-1].strip() == "2"  # the counts row's last column
