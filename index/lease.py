"""One writer per index on S3: a lock object, created only if absent, held by a renewed lease.

LanceDB's commits do not keep two writers apart: two processes that ``merge_insert``
the same keys into one table on S3 both commit, and every row is there twice
(measured against a local S3 server, docs/benchmarks.md). So a sync first creates
``<index>/.citeline-writer.lock`` with ``If-None-Match: *``, which S3 (and S3-compatible
servers) grant to exactly one of several writers. The holder rewrites it every
``lease_s / 4`` seconds, each time only if it is still the version it wrote
(``If-Match``); a holder killed without releasing it is taken over once its lease has
run out, judged on the storage's own clock (the response's Date against the object's
LastModified), so two machines' clocks never need to agree.
"""
from __future__ import annotations

import json
import os
import socket
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Iterator

from botocore.exceptions import BotoCoreError, ClientError

from citeline.schemas.errors import IndexBusy, WriterLost

LOCK_KEY = ".citeline-writer.lock"
LEASE_S = 60.0  # how long a killed holder keeps others out
# The leases this process holds, by index URI: writes check theirs first (``check_writer``).
_HELD: dict[str, "Lease"] = {}
_LOST = ("PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey", "404", "412", "409")


@dataclass(frozen=True)
class LockObject:
    bucket: str
    key: str

    @classmethod
    def of(cls, uri: str) -> "LockObject":
        bucket, _, prefix = uri.removeprefix("s3://").partition("/")
        prefix = prefix.strip("/")
        return cls(bucket, f"{prefix}/{LOCK_KEY}" if prefix else LOCK_KEY)


def s3_client():
    """A client configured as s3fs and LanceDB are: by AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ..."""
    import botocore.session  # ~0.1 s: only an S3 index pays it, not every local sync

    session = botocore.session.get_session()
    return session.create_client("s3", region_name=session.get_config_variable("region") or "us-east-1")


class Lease:
    """A held lock object, renewed on a thread until released."""

    def __init__(self, client, lock: LockObject, etag: str, lease_s: float, sent: float | None = None):
        self.client, self.lock, self.etag, self.lease_s = client, lock, etag, lease_s
        self.sent = time.monotonic() if sent is None else sent  # when the last granted put was sent
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, name="citeline-lease", daemon=True)

    def start(self) -> "Lease":
        self._thread.start()
        return self

    def _renew(self) -> None:
        while not self._stop.wait(self.lease_s / 4):
            try:
                sent = time.monotonic()
                self.etag = put(self.client, self.lock, self.lease_s, IfMatch=self.etag)
                self.sent = sent
            except ClientError as exc:
                if _code(exc) in _LOST:  # taken over: this process stalled past its lease
                    self.lost = True
                    return
                # a transient storage error: try again at the next beat, well within the lease

    def check(self) -> None:
        """Before a write: the lock object is still the one this lease wrote, with time to spare.

        Renewals come every quarter lease; half a lease without one (the storage refused
        them) leaves too little of it for a write to finish before another writer may take
        over. The lock object is looked at (one HEAD) so that a takeover is seen at once,
        not at the next renewal.

        Raises:
            WriterLost: the lease ran out, or another writer holds the lock object now.
        """
        held_s = time.monotonic() - self.sent
        if not self.lost and held_s > self.lease_s / 2:
            raise WriterLost(f"the writer lease on {self.lock.bucket}/{self.lock.key} was last renewed {held_s:.0f} s "
                             f"ago (lease {self.lease_s:.0f} s): the storage refused the renewals; the run stops "
                             "before writing more. Run it again: it finishes what this one left.")
        try:
            etag = self.client.head_object(Bucket=self.lock.bucket, Key=self.lock.key)["ETag"]
        except ClientError as exc:
            if _code(exc) not in _LOST:
                return  # a transient storage error: the lease was renewed recently enough (above)
            etag = None
        except BotoCoreError:  # the storage unreachable for a moment: as above
            return
        if self.lost or etag != self.etag:
            self.lost = True
            raise WriterLost(f"another writer took over the index's lock object {self.lock.bucket}/{self.lock.key} "
                             "(this run's lease ran out while it stalled): the run stops before writing more. "
                             "Run it again once the other writer is done.")

    def release(self) -> None:
        self._stop.set()
        self._thread.join()
        if self.lost:
            return
        try:
            self.client.delete_object(Bucket=self.lock.bucket, Key=self.lock.key, IfMatch=self.etag)
        except ClientError as exc:
            if _code(exc) not in _LOST:
                raise


@contextmanager
def lease_lock(uri: str, wait_s: float = 0.0, lease_s: float = LEASE_S) -> Iterator[Lease]:
    """Hold the S3 index's lock object, waiting up to ``wait_s`` seconds for it.

    Raises:
        IndexBusy: another writer holds a live lease after ``wait_s``.
    """
    lease = acquire(uri, wait_s, lease_s).start()
    _HELD[uri] = lease
    try:
        yield lease
    finally:
        _HELD.pop(uri, None)
        lease.release()


def check_writer(uri: str) -> None:
    """Before a write to ``uri``: this process still holds its lease (a no-op where it holds none:
    a local index, guarded by its flock).

    Raises:
        WriterLost: as ``Lease.check``.
    """
    if (lease := _HELD.get(uri)) is not None:
        lease.check()


def acquire(uri: str, wait_s: float = 0.0, lease_s: float = LEASE_S) -> Lease:
    """Create the lock object (or take over an expired one); the Lease is not yet renewed."""
    client, lock = s3_client(), LockObject.of(uri)
    deadline = time.monotonic() + wait_s
    while True:
        sent = time.monotonic()
        etag, holder = try_take(client, lock, lease_s)
        if etag is not None:
            return Lease(client, lock, etag, lease_s, sent)
        if time.monotonic() >= deadline:
            raise IndexBusy(f"the index at {uri} is being written by process {holder}; "
                            "wait for it to finish (or pass --wait SECONDS)")
        time.sleep(0.5)


def try_take(client, lock: LockObject, lease_s: float) -> tuple[str | None, str]:
    """(the lock object's ETag, this holder) when taken; (None, its holder) when another holds it."""
    try:
        return put(client, lock, lease_s, IfNoneMatch="*"), holder_name()
    except ClientError as exc:
        if _code(exc) not in _LOST:
            raise
    try:
        found = client.get_object(Bucket=lock.bucket, Key=lock.key)
    except ClientError as exc:
        if _code(exc) in _LOST:  # released in between: try again at once
            return None, "another process"
        raise
    body = _body(found)
    if not _expired(found, float(body.get("lease_s", LEASE_S))):
        return None, str(body.get("holder", "another process"))
    try:  # a dead holder's: take it over, unless another waiter just did
        return put(client, lock, lease_s, IfMatch=found["ETag"]), holder_name()
    except ClientError as exc:
        if _code(exc) not in _LOST:
            raise
        return None, str(body.get("holder", "another process"))


def put(client, lock: LockObject, lease_s: float, **condition) -> str:
    """Write the lock object under ``condition``; its new ETag."""
    body = json.dumps({"holder": holder_name(), "lease_s": lease_s}).encode()
    return client.put_object(Bucket=lock.bucket, Key=lock.key, Body=body, **condition)["ETag"]


def holder_name() -> str:
    return f"{os.getpid()} on {socket.gethostname()}"


def _body(found: dict) -> dict:
    try:
        body = json.loads(found["Body"].read())
    except ValueError:  # not ours to read: treated as held, for the default lease
        return {}
    return body if isinstance(body, dict) else {}


def _expired(found: dict, lease_s: float) -> bool:
    """Whether the lease ran out, on the storage's clock: its Date now against the lock's LastModified."""
    date = found.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date")
    now = parsedate_to_datetime(date).timestamp() if date else time.time()
    return now - found["LastModified"].timestamp() > lease_s


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))
