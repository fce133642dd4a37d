"""rm, retry, serve and reindex with the folder and the index on S3 (a moto server on loopback),
and the guard that keeps writers off object stores without a lock object (gs://, az:// …)."""
import json
from pathlib import Path

import pytest

from citeline.flows.ingest import index_folder
from citeline.index.check import check_index
from citeline.index.lease import LockObject, s3_client
from citeline.index.store import Store
from citeline.schemas.settings import IndexSettings
from citeline.tasks import reembed
from fakes import FAKE
from testkit import invoke

pytestmark = [pytest.mark.usefixtures("prefect_harness")]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "docs"
OTHER = b'{"holder": "the other writer", "lease_s": 60}'


def put(bucket: str, key: str, body: bytes) -> None:
    s3_client().put_object(Bucket=bucket, Key=key, Body=body)


def upload_examples(bucket: str) -> str:
    for name in ("04-dropout.md", "10-lr-scheduler.md"):
        put(bucket, f"docs/{name}", (EXAMPLES / name).read_bytes())
    return f"s3://{bucket}/docs"


@pytest.fixture
def on_s3(s3_bucket) -> tuple[str, str]:
    """(the synced prefix, the index) in a fresh bucket, two documents indexed."""
    root, db = upload_examples(s3_bucket), f"s3://{s3_bucket}/index"
    state = index_folder(root, IndexSettings(db=db, model=FAKE), return_state=True)
    assert state.is_completed() and state.result().indexed == 2, state.message
    return root, db


def sources(db: str) -> list[str]:
    return sorted(r["source"] for r in Store(db).document_rows(["source"]))


def test_rm_of_an_s3_document_forgets_it(on_s3):
    root, db = on_s3
    result = invoke("rm", f"{root}/04-dropout.md", "--db", db, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["removed"] == [f"{root}/04-dropout.md"] and report["still_exists"] is True
    assert sources(db) == [f"{root}/10-lr-scheduler.md"]
    assert check_index(Store(db)) == []


def test_rm_of_an_s3_prefix_forgets_its_documents_and_its_root(on_s3):
    root, db = on_s3
    result = invoke("rm", root + "/", "--db", db)
    assert result.exit_code == 0, result.output
    assert "removed 2 documents" in result.output
    store = Store(db)
    assert sources(db) == [] and store.roots() == [] and check_index(store) == []


def test_retry_reruns_a_failed_s3_document(s3_bucket):
    root, db = upload_examples(s3_bucket), f"s3://{s3_bucket}/index"
    put(s3_bucket, "docs/broken.md", b"# Broken\n\nnot \xff\xfe UTF-8\x00\x01\n")
    first = invoke("index", root, "--db", db, "--model", FAKE, "--no-progress")
    assert first.exit_code == 3 and "broken.md" in first.output, first.output

    put(s3_bucket, "docs/broken.md", b"# Mended\n\nnow plain UTF-8 about zebras\n")
    retried = invoke("retry", f"{root}/broken.md", "--db", db, "--json")
    assert retried.exit_code == 0, retried.output
    assert json.loads(retried.output)["summary"]["indexed"] == 1
    store = Store(db)
    assert {r["status"] for r in store.document_rows(["status"])} == {"indexed"}
    assert "zebras" in " ".join(r["content"] for r in store.chunk_rows(["content"]))
    assert check_index(store) == []


def test_serve_schedules_syncs_of_an_s3_prefix_into_an_s3_index(s3_bucket):
    from citeline.flows.operations import sync_folder
    from citeline.flows.serve import FolderSync

    root, db = upload_examples(s3_bucket), f"s3://{s3_bucket}/index"
    sync = FolderSync.of(root + "/", IndexSettings(db=db, model=FAKE), "0 3 * * *")
    assert (sync.name, sync.root, sync.settings.db) == ("sync-docs", root, db)
    # the flow run the schedule starts, run here once with the deployment's parameters as the server stores them
    state = sync_folder(**json.loads(json.dumps(sync.parameters)), return_state=True)
    assert state.is_completed() and state.result().indexed == 2, state.message
    assert sources(db) == [f"{root}/04-dropout.md", f"{root}/10-lr-scheduler.md"]
    assert check_index(Store(db)) == []


def test_serve_checks_an_s3_prefix_as_index_does(s3_bucket):
    missing = invoke("serve", f"s3://{s3_bucket}/nothing-here", "--db", f"s3://{s3_bucket}/index", "--json")
    assert missing.exit_code == 2 and "no object" in missing.output, missing.output
    root = upload_examples(s3_bucket)
    found = invoke("serve", root, "--db", f"s3://{s3_bucket}/index", "--json")  # no PREFECT_API_URL here
    assert found.exit_code == 2 and "PREFECT_API_URL" in found.output, found.output


def test_a_reembed_whose_lease_was_taken_over_stops_with_writer_lost(on_s3, monkeypatch):
    _, db = on_s3
    lock, real_rechunk = LockObject.of(db), reembed.rechunk

    def taken_over_meanwhile(*args, **kwargs):  # as if the re-index stalled past its lease and another writer came
        s3_client().put_object(Bucket=lock.bucket, Key=lock.key, Body=OTHER)
        return real_rechunk(*args, **kwargs)

    monkeypatch.setattr(reembed, "rechunk", taken_over_meanwhile)
    result = invoke("reindex", "--db", db, "--model", FAKE, "--strategy", "A", "--json")
    assert result.exit_code == 1, result.output
    assert json.loads(result.output)["error"]["kind"] == "writer-lost"
    store = Store(db)
    assert store.stamp().strategy != "A"  # not switched
    staged = store.staging_table()
    assert staged is None or store.count_chunks(table=staged) == 0  # not one re-embedded document written
    assert s3_client().get_object(Bucket=lock.bucket, Key=lock.key)["Body"].read() == OTHER


WRITERS = [["index", str(EXAMPLES)], ["retry"], ["rm", "/anything"], ["gc"], ["reindex", "--model", FAKE],
           ["calibrate"], ["serve", str(EXAMPLES)], ["check", "--repair"]]
STORES = ["gs://bucket/index", "az://container/index", "abfs://c@account/index", "s3+ddb://bucket/index"]


@pytest.mark.parametrize(("command", "db"), [*((c, STORES[0]) for c in WRITERS),
                                             *((WRITERS[0], store) for store in STORES[1:])])
def test_a_writer_on_an_object_store_without_a_lock_object_is_refused(command, db):
    result = invoke(*command, "--db", db, "--json")
    assert result.exit_code == 2, result.output
    error = json.loads(result.output)["error"]
    assert error["kind"] == "usage"
    assert db.split("://")[0] + "://" in error["message"] and "s3://" in error["message"], error
