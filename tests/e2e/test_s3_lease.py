"""A sync that lost its writer lease on S3 stops before its next write (against a moto server).

The lease is lost two ways: another writer took the lock object over (this run stalled past
its lease), or the storage refused the renewals for half a lease. Either way the run stops
with a clear error and exit status 1, and writes nothing more; the other writer's lock
object is left alone.
"""
import time

import pytest

from citeline.index.lease import LockObject, acquire, lease_lock, s3_client
from citeline.index.store import Store
from citeline.schemas.errors import WriterLost
from citeline.tasks import document
from fakes import FAKE
from testkit import invoke

pytestmark = [pytest.mark.usefixtures("prefect_harness")]
OTHER = b'{"holder": "the other writer", "lease_s": 60}'


@pytest.fixture
def db(s3_bucket) -> str:
    return f"s3://{s3_bucket}/index"


def lock_body(db: str) -> bytes:
    lock = LockObject.of(db)
    return s3_client().get_object(Bucket=lock.bucket, Key=lock.key)["Body"].read()


def test_a_run_whose_lock_object_was_taken_over_stops_before_its_next_write(docs, db, monkeypatch):
    lock, real_prepare = LockObject.of(db), document.prepare

    def taken_over_meanwhile(*args, **kwargs):  # as if this run stalled past its lease and another writer came
        s3_client().put_object(Bucket=lock.bucket, Key=lock.key, Body=OTHER)
        return real_prepare(*args, **kwargs)

    monkeypatch.setattr(document, "prepare", taken_over_meanwhile)
    result = invoke("index", docs, "--db", db, "--model", FAKE, "--no-progress")

    assert result.exit_code == 1, result.output
    assert "another writer took over the index's lock object" in result.output
    store = Store(db)
    assert store.count_chunks() == 0 and store.document_rows() == []  # not one document written
    assert lock_body(db) == OTHER  # the other writer's lock object is not released by this run


def test_a_lease_not_renewed_for_half_its_length_is_lost(db):
    lease = acquire(db, lease_s=2.0)  # never renewed: as when the storage refuses every renewal
    lease.check()  # fresh: held
    time.sleep(1.2)
    with pytest.raises(WriterLost, match="last renewed 1 s ago"):
        lease.check()


def test_a_held_lease_passes_its_checks_and_is_released(db):
    with lease_lock(db, lease_s=2.0) as lease:
        for _ in range(3):  # renewed every half second: never half a lease old
            time.sleep(0.7)
            lease.check()
    with lease_lock(db):  # released: free again
        pass
