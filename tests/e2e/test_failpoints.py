"""A real `citeline` process killed (SIGKILL) at every failpoint of the write paths, then the folder
changed (a file deleted, one renamed, an edit undone) and synced again: the index equals a clean
index of the same folder — the same paths, the same chunk rows per path, every sentence of the
folder found once, nothing the folder no longer holds served (points: index/faults.py,
outcomes: docs/reliability.md, "Failpoints").

The process is tests/fixtures/fake_cli.py (the fake embedder) on the session's Prefect server,
armed with CITELINE_FAILPOINT; a few seconds per point.
"""
import subprocess
import sys
from pathlib import Path

import pytest

from citeline.flows.ingest import index_folder
from citeline.index.check import check_index
from citeline.index.store import Store
from citeline.schemas.settings import DEFAULT_STRATEGY, IndexSettings
from fakes import FAKE

pytestmark = [pytest.mark.slow]
FAKE_CLI = Path(__file__).resolve().parents[1] / "fixtures" / "fake_cli.py"

# One sentence each, words no other file has: found once in a clean index.
FILES = {
    "alpha.md": "# Alpha\n\nAlpha keeps the harbour ledger of quinces and barrels.\n",
    "beta.md": "# Beta\n\nBeta charts the glacier moraine with copper theodolites.\n",
    "gamma.md": "# Gamma\n\nGamma brews juniper cordial beneath the abbey cloister.\n",
}
EDIT = "Edited: the harbour ledger now lists walrus tusks.\n"  # undone before the re-sync
NEW = "# Delta\n\nDelta rewires the funicular signal box at midnight.\n"  # deleted before the re-sync


def cli(env: dict[str, str], *args: str, point: str | None = None) -> subprocess.CompletedProcess:
    env = {**env, "CITELINE_FAILPOINT": f"{point}:kill"} if point else env
    return subprocess.run([sys.executable, str(FAKE_CLI), *args], env=env, capture_output=True, text=True,
                          timeout=300)


def index(env, folder: Path, db: Path, point: str | None = None, *extra: str) -> subprocess.CompletedProcess:
    return cli(env, "index", str(folder), "--db", str(db), "--model", FAKE, "--no-progress", *extra, point=point)


def killed(run: subprocess.CompletedProcess, point: str) -> None:
    assert run.returncode == -9, f"{point} was not reached: exit {run.returncode}\n{run.stdout}{run.stderr[-2000:]}"


@pytest.fixture
def copy(tmp_path, prefect_harness) -> tuple[Path, Path]:
    """A folder of three files and its index (built here: records name their folder's path)."""
    folder, db = tmp_path / "docs", tmp_path / "db"
    folder.mkdir()
    for name, text in FILES.items():
        (folder / name).write_text(text)
    assert index_folder(str(folder), IndexSettings(db=str(db), model=FAKE), return_state=True).is_completed()
    return folder, db


def change_before_the_kill(folder: Path) -> None:
    """An edit, a rename (its rows lent to the new path), a deletion and a new file: every step writes."""
    with (folder / "alpha.md").open("a") as f:
        f.write(EDIT)
    (folder / "beta.md").rename(folder / "beta-moved.md")
    (folder / "gamma.md").unlink()
    (folder / "delta.md").write_text(NEW)


def change_after_the_kill(folder: Path) -> None:
    """The edit undone (the indexed bytes again), the new file deleted, the renamed one renamed again."""
    (folder / "alpha.md").write_text(FILES["alpha.md"])
    (folder / "delta.md").unlink(missing_ok=True)
    (folder / "beta-moved.md").rename(folder / "beta-again.md")


def served_rows(db: Path) -> list[dict]:
    store = Store(str(db))
    return store.chunk_rows(["path", "content"], store.owned_where())


def assert_equals_a_clean_index(folder: Path, db: Path, tmp_path: Path,
                                 gone: tuple[str, ...] = ("walrus", "funicular", "juniper"), strategy: str = DEFAULT_STRATEGY) -> None:
    clean = tmp_path / "clean"
    assert index_folder(str(folder), IndexSettings(db=str(clean), model=FAKE, strategy=strategy),
                        return_state=True).is_completed()
    store = Store(str(db))
    assert check_index(store) == []
    assert sorted(r["path"] for r in store.document_rows(["path"])) == sorted(
        r["path"] for r in Store(str(clean)).document_rows(["path"]))
    every = sorted((r["path"], r["content"]) for r in served_rows(db))
    assert every == sorted((r["path"], r["content"]) for r in Store(str(clean)).chunk_rows(["path", "content"]))
    # Rows no record owns are only those of forgotten documents, kept for the grace period
    # (no reader sees them, a sync after it deletes them): no writer's leftovers.
    assert store.debris_generations() == []
    assert store.count_chunks() - store.count_chunks(owned=True) == store.kept_rows()[1]
    text = " ".join(content for _, content in every)
    for name in folder.iterdir():
        sentence = name.read_text().splitlines()[2]
        assert text.count(sentence) == 1, (name.name, sentence)
    for word in gone:  # the undone edit, the deleted new file, the deleted old one
        assert word not in text


SYNC_POINTS = ["write.chunks", "write.between", "write.records", "rename.between", "delete.between",
               "finish.optimize"]


@pytest.mark.parametrize("point", SYNC_POINTS)
def test_a_sync_killed_at_each_point_heals_with_one_sync(copy, cli_env, tmp_path, point):
    folder, db = copy
    change_before_the_kill(folder)
    killed(index(cli_env, folder, db, point), point)
    change_after_the_kill(folder)
    rerun = index(cli_env, folder, db)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr[-2000:]
    assert_equals_a_clean_index(folder, db, tmp_path)


def test_a_sync_killed_while_it_sweeps_heals_with_the_next(copy, cli_env, tmp_path):
    """sweep.between is reached only by a sync after a kill that left rows no record owns."""
    folder, db = copy
    change_before_the_kill(folder)
    killed(index(cli_env, folder, db, "write.between"), "write.between")
    change_after_the_kill(folder)
    killed(index(cli_env, folder, db, "sweep.between"), "sweep.between")
    assert index(cli_env, folder, db).returncode == 0
    assert_equals_a_clean_index(folder, db, tmp_path)


def test_rm_killed_between_its_commits_heals_with_one_sync(copy, cli_env, tmp_path):
    folder, db = copy
    (folder / "gamma.md").unlink()
    killed(cli(cli_env, "rm", str(folder / "gamma.md"), "--db", str(db), point="delete.between"), "delete.between")
    assert check_index(Store(str(db))) == []
    assert "juniper" not in " ".join(r["content"] for r in served_rows(db))
    assert index(cli_env, folder, db).returncode == 0
    assert_equals_a_clean_index(folder, db, tmp_path)


def test_retry_killed_between_its_commits_heals_with_one_sync(copy, cli_env, tmp_path):
    """`citeline retry` writes through the same batch write as a sync: its failed document, fixed
    since, is killed between its rows and its record, then the fix undone."""
    folder, db = copy
    store = Store(str(db))
    store.upsert_documents([{"doc_id": r["doc_id"], "status": "failed", "stage": "extract", "reason": "test"}
                            for r in store.document_rows(["doc_id", "path"]) if r["path"] == "alpha.md"])
    with (folder / "alpha.md").open("a") as f:
        f.write(EDIT)
    killed(cli(cli_env, "retry", "--db", str(db), "--model", FAKE, point="write.between"), "write.between")
    (folder / "alpha.md").write_text(FILES["alpha.md"])
    assert "walrus" not in " ".join(r["content"] for r in served_rows(db))
    assert index(cli_env, folder, db).returncode == 0
    assert_equals_a_clean_index(folder, db, tmp_path, gone=("walrus",))


@pytest.mark.parametrize("point", ["reindex.document", "reindex.switch", "reindex.restamp"])
def test_a_reindex_killed_at_each_point_resumes_and_a_sync_heals(copy, cli_env, tmp_path, point):
    """Killed re-index to strategy C, run again (it resumes), a file deleted, one sync with C."""
    folder, db = copy
    reindex = ("reindex", "--db", str(db), "--model", FAKE, "--strategy", "c")
    killed(cli(cli_env, *reindex, point=point), point)
    again = cli(cli_env, *reindex)
    assert again.returncode == 0, again.stdout + again.stderr[-2000:]
    (folder / "gamma.md").unlink()
    assert index(cli_env, folder, db, None, "--strategy", "c").returncode == 0
    assert_equals_a_clean_index(folder, db, tmp_path, gone=("juniper",), strategy="C")


def test_gc_killed_between_its_drops_and_run_again_leaves_the_live_index_whole(copy, cli_env, tmp_path):
    folder, db = copy
    assert cli(cli_env, "reindex", "--db", str(db), "--model", FAKE, "--strategy", "c").returncode == 0
    killed(cli(cli_env, "gc", "--db", str(db), "--yes", point="gc.drop"), "gc.drop")
    again = cli(cli_env, "gc", "--db", str(db), "--yes")
    assert again.returncode == 0, again.stdout + again.stderr[-2000:]
    assert [active for _, _, active in Store(str(db)).chunk_tables()] == [True]
    assert index(cli_env, folder, db, None, "--strategy", "c").returncode == 0
    assert_equals_a_clean_index(folder, db, tmp_path, gone=(), strategy="C")
