"""Input folder and index on S3, against a local S3 server (moto in server mode on loopback).

No cloud and no mock of boto: s3fs, LanceDB's object store and the lock object all talk
HTTP to a real server process thread, configured only by the AWS variables a user sets.
"""
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from citeline.library import Index
from citeline.flows.ingest import index_folder
from citeline.index.check import check_index, source_warnings
from citeline.index.lease import LockObject, lease_lock, s3_client
from citeline.index.store import Store
from citeline.schemas.settings import IndexSettings
from fakes import FAKE

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "docs"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
pytestmark = [pytest.mark.usefixtures("prefect_harness")]


@pytest.fixture
def bucket(s3_bucket) -> str:
    return s3_bucket


def put(bucket: str, key: str, body: bytes) -> None:
    s3_client().put_object(Bucket=bucket, Key=key, Body=body)


def upload_examples(bucket: str, names=("04-dropout.md", "10-lr-scheduler.md")) -> str:
    for name in names:
        put(bucket, f"docs/{name}", (EXAMPLES / name).read_bytes())
    return f"s3://{bucket}/docs"


def sync(root: str, settings: IndexSettings):
    state = index_folder(root, settings, return_state=True)
    assert state.is_completed(), state.message
    return state.result()


def assert_consistent(db: str) -> None:
    store = Store(db)
    assert check_index(store) == []
    assert source_warnings(store) == []
    ids = Counter(r["chunk_id"] for r in store.chunk_rows(["chunk_id"]))
    assert ids and max(ids.values()) == 1


def test_sync_change_delete_and_query_on_s3(bucket):
    root = upload_examples(bucket)
    put(bucket, "docs/.hidden.md", b"# Hidden\n\nnever indexed\n")
    put(bucket, "docs/node_modules/dep.md", b"# Dependency\n\nnever indexed\n")
    put(bucket, "docs/.citelineignore", b"drafts/\n")
    put(bucket, "docs/drafts/wip.md", b"# Draft\n\nnever indexed\n")
    settings = IndexSettings(db=f"s3://{bucket}/index", model=FAKE)

    first = sync(root, settings)
    assert (first.indexed, first.failed) == (2, 0)
    store = Store(settings.db)
    sources = sorted(r["source"] for r in store.document_rows(["source"]))
    assert sources == [f"{root}/04-dropout.md", f"{root}/10-lr-scheduler.md"]
    assert store.roots() == [root]
    assert_consistent(settings.db)

    assert sync(root, settings).skipped == 2  # stat first: size, LastModified and ETag unchanged

    text = (EXAMPLES / "10-lr-scheduler.md").read_text() + "\n\nWarm restarts help zebras.\n"
    put(bucket, "docs/10-lr-scheduler.md", text.encode())
    changed = sync(root, settings)
    assert (changed.indexed, changed.skipped) == (1, 1)
    assert "zebras" in " ".join(r["content"] for r in Store(settings.db).chunk_rows(["content"]))
    assert_consistent(settings.db)

    s3_client().delete_object(Bucket=bucket, Key="docs/04-dropout.md")
    gone = sync(root, settings)
    assert (gone.deleted, gone.skipped) == (1, 1)
    assert [r["path"] for r in Store(settings.db).document_rows(["path"])] == ["10-lr-scheduler.md"]
    assert_consistent(settings.db)

    hits = Index.open(settings.db, FAKE).search("warm restarts zebras", k=3)
    assert hits and hits[0].document == "10-lr-scheduler.md"
    assert hits[0].uri.startswith(f"s3://{bucket}/docs/10-lr-scheduler.md#")


def test_cli_indexes_an_s3_prefix_and_check_passes(bucket):
    from testkit import invoke

    root = upload_examples(bucket)
    db = f"s3://{bucket}/index"
    result = invoke("index", root, "--db", db, "--model", FAKE, "--no-progress")
    assert result.exit_code == 0, result.output
    assert "indexed 2" in result.output
    checked = invoke("check", "--db", db)
    assert checked.exit_code == 0, checked.output


def test_a_hostile_key_is_stored_and_printed_escaped(bucket):
    from testkit import invoke

    put(bucket, "docs/evil\x1b[31mred\u202e.md", b"# Evil\n\nA key with an escape sequence and a newline.\n")
    root = f"s3://{bucket}/docs"
    db = f"s3://{bucket}/index"
    assert sync(root, IndexSettings(db=db, model=FAKE)).indexed == 1
    assert Store(db).document_rows(["path"])[0]["path"] == "evil\x1b[31mred\u202e.md"
    result = invoke("search", "escape sequence", "--db", db)
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "evil" in result.output


def test_a_missing_prefix_is_a_usage_error(bucket):
    from testkit import invoke

    result = invoke("index", f"s3://{bucket}/nothing-here", "--db", f"s3://{bucket}/index", "--model", FAKE,
                    "--no-progress")
    assert result.exit_code == 2  # as for a local path that does not exist
    assert "nothing-here" in result.output and "no object" in result.output


def test_the_lock_object_keeps_a_second_writer_out_until_released(bucket):
    db = f"s3://{bucket}/index"
    with lease_lock(db):
        with pytest.raises(Exception) as busy:
            with lease_lock(db, wait_s=0.6):
                pass
        assert "is being written by process" in str(busy.value)
    with lease_lock(db):  # released: free again
        pass


def test_a_dead_holders_lease_is_taken_over_once_it_runs_out(bucket):
    from citeline.index.lease import acquire

    db = f"s3://{bucket}/index"
    acquire(db, lease_s=2.0)  # taken and never renewed nor released: a holder killed with -9
    started = time.monotonic()
    with lease_lock(db, wait_s=30):
        waited = time.monotonic() - started
    assert 1.0 <= waited < 10, waited
    obj = LockObject.of(db)
    assert obj.key == "index/.citeline-writer.lock"


# `citeline index` on the fake embedder; with GO set, imports done, it says "ready" and waits
# for that file, so two processes start their runs within milliseconds of each other.
RUN_WITH_FAKE = f"""
import os, sys, time
sys.path.insert(0, {str(FIXTURES)!r})
from fakes import FAKE, HashEmbedder
from citeline.pipeline import embed
embed.register(FAKE, lambda precision, batch_size: HashEmbedder())
from citeline.cli.main import main
import citeline.flows.ingest
go = os.environ.get("GO")
if go:
    print("ready", flush=True)
    while not os.path.exists(go):
        time.sleep(0.005)
sys.argv = ["citeline", *sys.argv[1:]]
main()
"""


def start_sync(root: str, db: str, cli_env: dict[str, str], *extra: str, go: Path | None = None) -> subprocess.Popen:
    """`citeline index` in its own process, on the fake embedder, against the test's S3 server."""
    env = {**cli_env, **({"GO": str(go)} if go else {})}
    return subprocess.Popen([sys.executable, "-c", RUN_WITH_FAKE, "index", root, "--db", db, "--model", FAKE,
                             "--no-progress", *extra], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.mark.slow  # two `citeline index` processes: interpreter start-up each
def test_two_syncs_started_at_once_against_one_s3_index_never_duplicate_rows(bucket, tmp_path, cli_env):
    names = sorted(p.name for p in EXAMPLES.glob("*.md"))
    root = upload_examples(bucket, names)
    db = f"s3://{bucket}/index"
    go = tmp_path / "go"
    runs = [start_sync(root, db, cli_env, "--wait", "300", go=go) for _ in range(2)]
    assert [p.stdout.readline().strip() for p in runs] == ["ready", "ready"]
    go.touch()  # both runs start now: without a guard, both plan an empty index and both write
    outputs = [p.communicate(timeout=600) for p in runs]
    assert [p.returncode for p in runs] == [0, 0], outputs

    store = Store(db)
    ids = [r["chunk_id"] for r in store.chunk_rows(["chunk_id"])]
    assert len(ids) == len(set(ids)) > 0
    assert sum(r["chunk_count"] for r in store.document_rows(["chunk_count"])) == len(ids)
    assert len(store.document_rows(["doc_id"])) == len(names)
    summaries = sorted(out for out, _ in outputs)
    assert any(f"indexed {len(names)}," in s for s in summaries), summaries  # one did the work ...
    assert any(f"skipped {len(names)}" in s for s in summaries), summaries  # ... the other found it done
    assert_consistent(db)


@pytest.mark.slow  # a `citeline index` process: interpreter start-up
def test_a_second_sync_without_wait_leaves_while_the_lock_object_is_held(bucket, cli_env):
    root = upload_examples(bucket)
    db = f"s3://{bucket}/index"
    with lease_lock(db):
        out, err = start_sync(root, db, cli_env).communicate(timeout=300)
    assert "is being written by process" in err and "--wait SECONDS" in err
    assert not Store(db).has_table("documents")



def test_the_service_serves_an_s3_source_and_its_ranges(bucket):
    from fastapi.testclient import TestClient

    from citeline.web.app import create_app

    root = upload_examples(bucket, ("04-dropout.md",))
    settings = IndexSettings(db=f"s3://{bucket}/index", model=FAKE)
    sync(root, settings)
    body = (EXAMPLES / "04-dropout.md").read_bytes()
    with TestClient(create_app(Index.open(settings.db, FAKE), poll_s=0), base_url="http://127.0.0.1") as client:
        (doc,) = client.get("/documents").json()["documents"]
        source = f"/sources/{doc['document_id']}"
        assert client.get(source).content == body
        part = client.get(source, headers={"Range": "bytes=10-19"})
        assert part.status_code == 206 and part.content == body[10:20]



def test_a_ranged_s3_source_fetches_only_its_range(bucket):
    """A 1-byte Range downloaded the whole object (12 such requests took the
    service from 368 MB to 1,129 MB). The GETs the service sends are counted by botocore's own
    events on the S3 server the test runs."""
    from fastapi.testclient import TestClient

    from citeline.pipeline.objects import filesystem
    from citeline.web.app import create_app

    root = upload_examples(bucket, ("04-dropout.md",))
    settings = IndexSettings(db=f"s3://{bucket}/index", model=FAKE)
    sync(root, settings)
    body = (EXAMPLES / "04-dropout.md").read_bytes()
    fetched: list[int] = []
    with TestClient(create_app(Index.open(settings.db, FAKE), poll_s=0), base_url="http://127.0.0.1") as client:
        (doc,) = client.get("/documents").json()["documents"]
        source = f"/sources/{doc['document_id']}"
        assert client.get(source).content == body  # the whole file still comes whole
        fs = filesystem(doc["source"])
        fs.s3.meta.events.register("after-call.s3.GetObject",
                                   lambda parsed, **_: fetched.append(int(parsed["ContentLength"])))
        one = client.get(source, headers={"Range": "bytes=100-100"})
        tail = client.get(source, headers={"Range": "bytes=-5"})
    assert one.status_code == 206 and one.content == body[100:101]
    assert tail.status_code == 206 and tail.content == body[-5:]
    assert fetched and sum(fetched) == 6, (fetched, len(body))


def test_most_of_a_prefix_gone_is_held_as_a_folder_is_and_an_emptied_one_forgets_nothing(bucket):
    """Deletion only from evidence on object storage too: the same plan holds them."""
    root = f"s3://{bucket}/docs"
    for i in range(20):
        put(bucket, f"docs/note-{i:02d}.md", f"# Note {i}\n\nShip {i * 7} reached the harbour.\n".encode())
    settings = IndexSettings(db=f"s3://{bucket}/index", model=FAKE)
    assert sync(root, settings).indexed == 20
    for i in range(11):
        s3_client().delete_object(Bucket=bucket, Key=f"docs/note-{i:02d}.md")
    held = index_folder(root, settings, return_state=True)
    assert held.name == "DeletionsHeld", held.message
    assert held.message == (f"not forgetting 11 documents under {root}: that is 11 of its 20 documents; "
                            "--allow-mass-delete forgets them")
    assert len(Store(settings.db).document_rows(["doc_id"])) == 20
    for i in range(11, 20):
        s3_client().delete_object(Bucket=bucket, Key=f"docs/note-{i:02d}.md")
    with pytest.raises(FileNotFoundError, match="no object under"):  # the run stops before it plans
        index_folder(root, settings, allow_mass_delete=True)
    assert len(Store(settings.db).document_rows(["doc_id"])) == 20
