"""Benches in smoke mode (issue 28, item 6): each runs as a script, in its own process, on a
tiny input and the fake embedder, exits 0 and prints its result lines, so a bench can no
longer rot unseen (bench/index_overhead.py, the headline one, failed for weeks with
``ValueError: not enough values to unpack`` once logging moved to the entry points).
No timing is asserted. The subprocesses use the session's Prefect server (``cli_env``)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from testkit import ROOT

SMOKES = {
    # the headline bench: the flow's events read into the report, on the fake embedder
    "index_overhead": (["--smoke"], ["RATIO", "where the flow's time went:", "prefect: flow start",
                                     "plan (walk, hash, compare)", "finish (FTS index + optimize)"]),
    "small_files": (["20"], ["documents   20 indexed, 0 failed", "run  "]),
    # issue 28 items 4 and 2/3: renames as a metadata write; each command in a fresh process
    "rename_costs": (["--smoke"], ["rename  flow", "deleted 20", "(0 encoded, "]),
    "cold_commands": (["--smoke"], ["smoke --help: exit 0", "smoke status: exit 0", "smoke search: exit 0"]),
    # the scale bench: grown past the vector-index threshold, served by citeline api
    "ann_scaling": (["--smoke", "--service"], ["vector index built automatically: True", "recall@10",
                                               "index on disk:", "citeline api GET /search over HTTP"]),
}


@pytest.mark.parametrize("bench", sorted(SMOKES))
def test_bench_runs_in_smoke_mode(bench, cli_env):
    args, expected = SMOKES[bench]
    done = subprocess.run([sys.executable, str(ROOT / "bench" / f"{bench}.py"), *args], capture_output=True,
                          text=True, cwd=ROOT, env=cli_env, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for line in expected:
        assert line in done.stdout, f"{bench}: no {line!r} in\n{done.stdout[-3000:]}"
