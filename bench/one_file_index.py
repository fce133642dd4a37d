"""A one-file ``citeline index``: how far above its own encode time?

    .venv/bin/python bench/one_file_index.py [--runs N] [--server-home DIR | --auto] [--smoke]
    .venv/bin/python bench/one_file_index.py --edit [--folder DIR] [--runs N]   # one file edited

A copy of examples/docs is indexed once with the packaged MiniLM. Then, ``--runs`` times, one new
Markdown note (one chunk) is written into it and ``citeline index`` syncs the folder in a fresh
process, as cron does when one file arrives: imports, Prefect's flow run, the plan, loading the
model, encoding the one chunk, the write, the exit. Its **encode time** is what encoding that note
costs a fresh process with nothing else: importing the embedding stack, loading the model and
encoding its text (``embed_documents``), exiting as the CLI does, timed the same way beside each
run. Printed: best and median of both and of their difference, which the goal bounds (≤ 3 s), and
the CPU and load.

``--edit``: instead of a new note, each run appends the note's paragraph to
one of the folder's Markdown files (the next one each run) and times the same fresh ``citeline
index``: an edit synced, what a user waits for after saving a file. ``--folder``: the folder
copied and indexed first (default examples/docs; the dev corpus is ../shared/corpora/dev/docs).

Prefect: ``PREFECT_API_URL``'s server when it is set; else as a fresh install runs, in a
CITELINE_HOME of the bench's own: each run on Prefect's temporary server. ``--auto``: in
``CITELINE_PREFECT_SERVER=auto`` mode, so the first, untimed index starts the citeline server,
every timed run finds it running, and the bench stops it at the end. ``--server-home DIR``: the
citeline server already running under that CITELINE_HOME.

``--smoke``: one run on the tests' fake embedder (tests/flows/test_bench_smoke.py): runs, no figure.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cold_commands import EXAMPLES, ROOT, cpu_model, timed  # noqa: E402

from citeline.schemas.settings import DEFAULT_MODEL  # noqa: E402

NOTE = ("# Harbour note {i}\n\nThe harbour committee moved its meeting {i} to the old pier, where the "
        "pump house and the tender board share a room; the minutes of meeting {i} are kept in the archive.\n")
# gc.freeze() at the end, as citeline's CLI does: shutdown's collections over torch's and
# transformers' objects (~0.7 s) are no part of encoding, and the baseline must not carry them.
ENCODE = ("from citeline.runtime import env; env.apply()\n"
          "import gc, sys\n"
          "from citeline.pipeline.embed import get_embedder\n"
          "get_embedder(sys.argv[1]).embed_documents([open(sys.argv[2]).read()])\n"
          "gc.freeze()\n")
FAKE_CLI = ROOT / "tests" / "fixtures" / "fake_cli.py"
FAKE = "fake/hashed-bag-of-words"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--server-home", help="a CITELINE_HOME whose citeline server runs (`citeline server start`)")
    parser.add_argument("--auto", action="store_true", help="the first index starts the citeline server")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--edit", action="store_true", help="edit one file a run instead of adding a note")
    parser.add_argument("--folder", type=Path, default=EXAMPLES, help="the folder indexed first")
    args = parser.parse_args()
    env = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1",
           "CITELINE_PREFECT_SERVER": "auto" if args.auto else ""}
    cli = [sys.executable, str(FAKE_CLI)] if args.smoke else [sys.executable, "-m", "citeline"]
    model = ["--model", FAKE] if args.smoke else []
    prefect = (f"the Prefect server at {env['PREFECT_API_URL']}" if env.get("PREFECT_API_URL") else
               f"citeline server under {args.server_home}" if args.server_home else
               "citeline server started by the first index (auto mode)" if args.auto else
               "temporary Prefect server")
    with tempfile.TemporaryDirectory() as tmp:
        env["CITELINE_HOME"] = args.server_home or str(Path(tmp) / "home")
        try:
            index_s, encode_s, load = runs(args, cli, model, env, Path(tmp))
        finally:
            if (Path(env["CITELINE_HOME"]) / "prefect" / "server.json").exists() and not args.server_home:
                subprocess.run([*cli, "server", "stop"], env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
    if args.smoke:
        print(f"smoke one-file index: exit 0, {index_s[0]:.2f} s")
        return
    above = [a - b for a, b in zip(index_s, encode_s)]
    print(f"{cpu_model()}, {os.cpu_count()} CPUs; load average {load:.2f} before, {os.getloadavg()[0]:.2f} after; "
          f"{args.runs} runs, {prefect}; {'one file edited' if args.edit else 'one note added'} in {args.folder}")
    for name, values in (("one-file index", index_s), ("its encode time", encode_s), ("index - encode", above)):
        print(f"{name:<16} best {min(values):6.2f} s  median {statistics.median(values):6.2f} s")


def runs(args, cli: list[str], model: list[str], env: dict[str, str], tmp: Path):
    """The first index, then ``args.runs`` one-file syncs timed, the note's encode time beside each."""
    folder, db = tmp / "docs", str(tmp / "db")
    shutil.copytree(args.folder, folder)
    edited = sorted(folder.rglob("*.md"))
    subprocess.run([*cli, "index", str(folder), "--db", db, "--no-progress", *model], cwd=ROOT, env=env,
                   check=True, stdout=subprocess.DEVNULL)
    load = os.getloadavg()[0]
    index_s, encode_s = [], []
    for i in range(1 if args.smoke else args.runs):
        if args.edit:
            note = edited[i % len(edited)]
            note.write_text(note.read_text() + "\n" + NOTE.format(i=i).split("\n", 2)[2])
        else:
            note = folder / f"harbour-{i}.md"
            note.write_text(NOTE.format(i=i))
        wall, _, code = timed([*cli, "index", str(folder), "--db", db, "--no-progress", *model], env)
        assert code == 0, f"index exited {code}"
        index_s.append(wall)
        if args.smoke:  # the fake embedder lives in the fake CLI's process only
            continue
        wall, _, code = timed([sys.executable, "-c", ENCODE, DEFAULT_MODEL, str(note)], env)
        assert code == 0, f"the encoder exited {code}"
        encode_s.append(wall)
    return index_s, encode_s, load


if __name__ == "__main__":
    main()
