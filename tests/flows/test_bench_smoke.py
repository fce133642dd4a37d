"""Benches in smoke mode: every script in bench/ runs on a tiny input and the
fake embedder, exits 0 and prints its result lines, so a bench can no longer rot unseen
(bench/index_overhead.py, the headline one, failed for weeks with ``ValueError: not enough
values to unpack`` once logging moved to the entry points). No timing is asserted.

Most run here, in this test process (``runpy``: no second interpreter paying Prefect's and
LanceDB's imports again), with the session's fake embedder and Prefect server; those that
start processes of their own, change this process's environment for good, or are about a
fresh process run as a script, in their own process. A bench whose subject is a real model
or a browser is marked ``model`` or ``slow`` (``make test``, not ``make check``). The shared
tiny inputs are bench/smokekit.py's."""
from __future__ import annotations

import ast
import runpy
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from testkit import ROOT

BENCH = ROOT / "bench"


@dataclass(frozen=True)
class Smoke:
    args: tuple[str, ...]
    expected: tuple[str, ...]  # lines (or parts of lines) the bench must print
    own_process: bool = False
    marks: tuple = ()


SMOKES = {
    # the headline bench: the flow's events read into the report, on the fake embedder
    "index_overhead": Smoke(("--smoke",), ("RATIO", "where the flow's time went:", "prefect: flow start",
                                           "plan (walk, hash, compare)", "finish (FTS index + optimize)"), True),
    "small_files": Smoke(("20",), ("documents   20 indexed, 0 failed", "run  "), True),
    # Renames as a metadata write; each command in a fresh process
    "rename_costs": Smoke(("--smoke",), ("rename  flow", "deleted 20", "(0 encoded, "), True),
    "one_file_index": Smoke(("--smoke",), ("smoke one-file index: exit 0",), True),
    "cold_commands": Smoke(("--smoke",), ("smoke --help: exit 0", "smoke status: exit 0", "smoke search: exit 0"),
                           True),
    # Prefect's share of a no-op sync against a running server (the session's)
    "prefect_start": Smoke(("--smoke",), ("Prefect outside the run", "prefect outside the run: first call"), True),
    # the scale bench: grown past the vector-index threshold, served by citeline api
    "ann_scaling": Smoke(("--smoke", "--service"), ("vector index built automatically: True", "recall@10",
                                                    "index on disk:", "citeline api GET /search over HTTP"), True),
    "owned_rows": Smoke(("--smoke",), ("unowned_generations", "one doc unowned  dense")),
    "filter_latency": Smoke(("--smoke",), ("exact 100 chunks  dense + path filter", "hnsw  100 chunks  bm25 + path filter",
                                           "predicate")),
    # the post-processing benches read two fake-embedder evaluations of the tiny corpus
    "gate_transfer": Smoke(("--smoke",), ("| fitted on | measured on | rule |", "question-maxsim",
                                          "calibrated (default)")),
    "model_compare": Smoke(("--smoke",), ("| E/dense | course (6) |", "| E/rerank | all (12) |",
                                          "bluffs (out-of-domain questions answered)", "recommended gate:")),
    "phrase_probes": Smoke(("--smoke",), (": 3 probes", "| dense |", "| rerank |")),
    # the gate and retrieval studies read an index of the tiny corpus, built once in this process
    "answerability_frontier": Smoke(("--smoke",), ("needle in the reranked top 4: course", "| gate | weights",
                                                   "| distance+rerank+gap |")),
    "gate_calibration": Smoke(("--smoke",), ("calibration: cut", "dev dense  cut 0.450", "dev rerank cut 0.450")),
    "query_latency": Smoke(("--smoke",), ("LATENCY  medians over 18 queries", "QUALITY  12 in-domain queries",
                                          "GATE  cosine cut", "nearest chunk in the dense top 4")),
    # the service benches start `citeline api` on the fake embedder (tests/fixtures/fake_cli.py)
    "http_latency": Smoke(("--smoke",), ('"search x4"', '"ask x4"', '"ratio_p50_1_client"')),
    "api_rss": Smoke(("--smoke",), ('"grown"', '"chunks": 300', '"peak_mb"')),
    # the sync benches: what a sync reads, encodes and records, on the fake embedder
    "many_failures": Smoke(("--smoke",), ("20 empty files + 1 document", "indexed 1, failed 20", "documents table:")),
    "reuse_costs": Smoke(("--smoke",), ("edit    2-page PDF", "extracted 1, encoded 1", "rename  10 files",
                                        "extracted 0, encoded 0")),
    "sync_costs": Smoke(("--smoke",), ("(skipped 4, extractions 0)", "re-index (  32)", "switched=True, extractions 0")),
    "extract_speed": Smoke(("--smoke",), ("text PDF", "OCR ", "speech     RTF")),
    # a moto S3 server and AWS variables set in the bench's process for good: in its own
    "s3_sync": Smoke(("--smoke",), ("s3 prefix -> s3 index: first sync", "S3 / local: first sync"), True),
    # each index or transcription in a child process, as the bench measures it
    "rss_scaling": Smoke(("--smoke",), ("2x     8 docs", "peak RSS by phase")),
    "highlight_lines": Smoke(("--smoke",), ("course: ", "ticket: ", "the highlighted line holds it in")),
    "token_storage": Smoke(("index", "--smoke"), ("--no-token-vectors", "--token-vectors", "KiB/chunk")),
    "real_folder": Smoke(("--smoke",), ("| file | outcome | detail |", "04-dropout.md", "search rank (top 10)")),
    "speech_speed": Smoke(("--smoke",), ("round 1 done", "| citeline |")),
    # each step a fresh `citeline index` (the fake CLI) or query process; the peers not run
    "peers": Smoke(("--smoke",), ("citeline alone", "| dev | first index (s) |", "| notes | rename-all (s) |",
                                  "document in the top 8: ", "20 renamed"), True),
    # tens of seconds or a browser: `make test` only
    "dask_throughput": Smoke(("--smoke",), ("in-process (2 threads)", "LocalCluster, 1 worker(s), grouping on",
                                            "(6 documents, "), marks=(pytest.mark.slow,)),
    "prefect_growth": Smoke(("--smoke",), ("## sqlite", "## postgres", "no-op sync:", "1 files changed:",
                                           "| **all** |"), marks=(pytest.mark.slow,)),
    # three fresh temporary Prefect servers
    "temporary_server_start": Smoke(("--smoke",), ("round 1 no block registration", "round 1 Prefect's defaults",
                                                   "flow runs 1 / 2 / 3"), True, marks=(pytest.mark.slow,)),
    "page_latency": Smoke(("--smoke",), ('"n": 2', '"p50_ms"'), marks=(pytest.mark.slow,)),
    # a sync's optimize of the token table, LanceDB's against citeline's compaction
    "token_compaction": Smoke(("--smoke",), ("LanceDB Table.optimize()  optimize per edit",
                                             "TokenVectors.optimize()   optimize per edit")),
    # their subject is the real models: `make test` only (each still on the smallest input)
    "encoder_backends": Smoke(("--smoke",), ("16 chunks (strategy E), 12 queries", "int8 ", "batch-size sweep"),
                              marks=(pytest.mark.model,)),
}

# The smokes that read the dev corpus (bench/smokekit.py's tiny corpus takes its needles from it):
# skipped where it is not checked out, as tests/unit/test_chunk.py's dev-corpus test is.
DEV = ROOT.parent / "shared" / "corpora" / "dev"
READS_DEV = {"answerability_frontier", "api_rss", "encoder_backends", "gate_calibration", "gate_transfer", "http_latency",
             "model_compare", "page_latency", "phrase_probes", "query_latency", "speech_speed", "highlight_lines",
             "real_folder", "token_storage", "peers"}


def run_here(bench: str, args: tuple[str, ...], monkeypatch, capfd) -> str:
    """The bench run as ``python bench/NAME.py ARGS`` would run it, in this process."""
    from citeline.pipeline import prepare

    monkeypatch.syspath_prepend(str(BENCH))  # a script's own folder is first on its path; undone after
    monkeypatch.setattr(sys, "argv", [str(BENCH / f"{bench}.py"), *args])
    # bench/sync_costs.py wraps extract_bytes to count the calls, as long as its process lives: undone after
    monkeypatch.setattr(prepare, "extract_bytes", prepare.extract_bytes)
    imported = set(sys.modules)
    try:
        runpy.run_path(str(BENCH / f"{bench}.py"), run_name="__main__")
    except SystemExit as exit_:
        assert exit_.code in (0, None), f"{bench} exited {exit_.code}:\n{capfd.readouterr().out[-3000:]}"
    finally:  # the bench modules it imported, but smokekit: its tiny index serves the next smoke
        for name in set(sys.modules) - imported - {"smokekit"}:
            if Path(getattr(sys.modules[name], "__file__", None) or "/").parent == BENCH:
                del sys.modules[name]
    return capfd.readouterr().out


@pytest.mark.parametrize("bench", [pytest.param(name, marks=SMOKES[name].marks) for name in sorted(SMOKES)])
def test_bench_runs_in_smoke_mode(bench, cli_env, monkeypatch, capfd):
    smoke = SMOKES[bench]
    if bench in READS_DEV and not (DEV / "ground_truth.jsonl").exists():
        pytest.skip(f"the dev corpus is not at {DEV}")
    if smoke.own_process:
        done = subprocess.run([sys.executable, str(BENCH / f"{bench}.py"), *smoke.args], capture_output=True,
                              text=True, cwd=ROOT, env=cli_env, timeout=300)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        out = done.stdout
    else:
        monkeypatch.chdir(ROOT)
        monkeypatch.setenv("PREFECT_API_URL", cli_env["PREFECT_API_URL"])  # for the processes a bench starts
        out = run_here(bench, smoke.args, monkeypatch, capfd)
    for line in smoke.expected:
        assert line in out, f"{bench}: no {line!r} in\n{out[-3000:]}"


def scripts() -> set[str]:
    """The benches: bench/*.py run as a script (an ``if __name__ == "__main__":`` block)."""
    def is_script(source: str) -> bool:
        return any(isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)
                   for node in ast.parse(source).body)

    return {p.stem for p in BENCH.glob("*.py") if is_script(p.read_text())}


def test_every_bench_has_a_smoke():
    """A new bench without an entry above fails here; a file of bench/ that is no script must be a
    helper some bench imports."""
    assert sorted(scripts() - set(SMOKES)) == [], "benches without a smoke entry in SMOKES"
    assert sorted(set(SMOKES) - scripts()) == [], "SMOKES names a bench that is not in bench/"
    assert sorted(READS_DEV - set(SMOKES)) == [], "READS_DEV names a bench that is not in SMOKES"
    sources = "\n".join(p.read_text() for p in BENCH.glob("*.py"))
    for helper in {p.stem for p in BENCH.glob("*.py")} - scripts():
        assert f"import {helper}" in sources or f"from {helper} import" in sources, f"bench/{helper}.py: no bench uses it"
