"""What a person sees on stderr: a readable terminal, and JSON lines when it is not one.

`citeline index -v` under a pseudo-terminal prints per-document lines and Prefect's own
while the progress bar runs; every line must land above the bar, none carrying a stale
bar in front of it. Piped, every stderr line is one JSON object with the run's ids.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "docs"
BAR = ("━", "╸", "╺")  # rich's BarColumn glyphs
pytestmark = [pytest.mark.model, pytest.mark.slow]


@pytest.fixture
def folder(tmp_path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("04-dropout.md", "SOURCE.md"):
        (docs / name).write_bytes((EXAMPLES / name).read_bytes())
    (docs / "broken.md").write_bytes(b"caf\xe9 latin-1 bytes\x00\x01")
    return docs


def clean_env() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "NO_COLOR", "TERM")}


def screen(raw: str, width: int) -> list[str]:
    """The lines a terminal shows after ``raw``: a small VT100 subset (what rich and Prefect emit)."""
    lines, row, col = [""], 0, 0
    tokens = re.finditer(r"\x1b\[([0-9;?]*)([A-Za-z])|\x1b[\]P][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b.|.", raw, re.S)
    for token in tokens:
        text = token.group(0)
        if token.group(2):
            n = int(token.group(1) or 1) if token.group(1).isdigit() else 1
            code = token.group(2)
            if code == "A":
                row = max(0, row - n)
            elif code == "B":
                row += n
            elif code == "G":
                col = n - 1
            elif code == "K":
                mode = token.group(1) or "0"
                lines[row] = "" if mode == "2" else lines[row][:col] if mode == "0" else " " * col + lines[row][col:]
            while row >= len(lines):
                lines.append("")
            continue
        if text.startswith("\x1b"):
            continue
        if text == "\r":
            col = 0
        elif text == "\n":
            row, col = row + 1, 0
            while row >= len(lines):
                lines.append("")
        else:
            line = lines[row].ljust(col)
            lines[row] = line[:col] + text + line[col + 1:]
            col = min(col + 1, width)
    return lines


def test_log_lines_print_above_the_bar_under_a_pty(folder, tmp_path):
    width = 160
    child = pexpect.spawn(sys.executable, ["-m", "citeline", "index", str(folder), "--db", str(tmp_path / "db"), "-v"],
                          env={**clean_env(), "TERM": "xterm", "COLUMNS": str(width)}, encoding="utf-8",
                          dimensions=(50, width), timeout=900)
    child.expect(pexpect.EOF)
    child.close()
    raw = child.before
    assert child.exitstatus == 3, raw[-3000:]
    assert "starting Prefect" in raw and "loading model" in raw  # stages named before anything is counted
    shown = [line.rstrip() for line in screen(raw, width) if line.strip()]
    with_bar = [line for line in shown if any(ch in line for ch in BAR)]
    assert len(with_bar) == 1 and "3/3" in with_bar[0], with_bar  # the final bar, once; no stale copies
    assert not [line for line in shown if line.lstrip().startswith(BAR)], shown
    assert any("document.indexed" in line for line in shown) and any("Finished in state" in line for line in shown)
    assert any(line.startswith("indexed 2, failed 1") for line in shown)


def test_every_stderr_line_of_a_piped_run_is_json(folder, tmp_path):
    done = subprocess.run([sys.executable, "-m", "citeline", "index", str(folder), "--db", str(tmp_path / "db"), "-v"],
                          env=clean_env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 3, done.stderr[-3000:]
    events = [json.loads(line) for line in done.stderr.splitlines()]  # each line parses, or this raises
    names = {e["event"] for e in events}
    assert {"run.started", "run.planned", "document.indexed", "document.failed", "run.finished"} <= names
    indexed = [e for e in events if e["event"] == "document.indexed"]
    assert all(e["flow_run_id"] and e["task_run_id"] and e["document_id"] for e in indexed), indexed
    assert any(e.get("logger") == "prefect.task_runs" for e in events)  # Prefect's own lines, as JSON too
    assert done.stdout.startswith("indexed 2, failed 1")


def test_default_run_is_quiet(folder, tmp_path):
    """Without -v: no per-document lines and no Prefect chatter, only the summary and failures."""
    done = subprocess.run([sys.executable, "-m", "citeline", "index", str(folder), "--db", str(tmp_path / "db")],
                          env=clean_env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 3, done.stderr[-3000:]
    assert done.stderr == ""
    assert done.stdout.splitlines()[1].startswith("  FAILED broken.md [extract] undecodable")
