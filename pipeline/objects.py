"""Input folders on object storage (``s3://bucket/prefix``), read through fsspec.

Endpoint and credentials come from the standard AWS variables (AWS_ENDPOINT_URL,
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION), which botocore reads for s3fs
and which LanceDB reads for an index on the same storage (index/store.py), so one
configuration serves both.

Listings are never cached: a sync must see the bucket as it is now, and a process
(a served deployment, the tests) runs many syncs.
"""
from __future__ import annotations

import errno  # noqa: F401 - is_transient_store_error's doctest uses it
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

import fsspec
from fsspec.exceptions import FSTimeoutError

from citeline.schemas.errors import DocumentError, StoreUnavailable, TooLarge, Unreadable, Vanished
from citeline.schemas.paths import is_remote

# A store unavailable for a while answers these (request timeout, throttling, 5xx), or one of
# the error codes AWS documents as retryable (botocore's retry handler lists the same).
TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})
TRANSIENT_CODES = frozenset({"RequestTimeout", "RequestTimeoutException", "SlowDown", "Throttling",
                             "ThrottlingException", "ThrottledException", "RequestThrottled",
                             "ServiceUnavailable", "InternalError", "OperationAborted"})


def filesystem(url: str) -> fsspec.AbstractFileSystem:
    """The fsspec file system of ``url``'s scheme, with no listings cache."""
    protocol = url.split("://", 1)[0]
    return fsspec.filesystem(protocol, use_listings_cache=False)


def object_info(url: str) -> dict | None:
    """The info of the one object ``url`` names; None when it is a prefix (a folder) or nothing."""
    try:
        info = filesystem(url).info(url)
    except FileNotFoundError:
        return None
    return info if info.get("type") == "file" else None


def is_object(url: str) -> bool:
    """Whether ``url`` names one object (a file), not a prefix holding objects (a folder)."""
    return object_info(url) is not None


def exists(url: str) -> bool:
    """Whether ``url`` is an object or a non-empty prefix."""
    return filesystem(url).exists(url)


def list_objects(root: str) -> list[tuple[str, dict]]:
    """(path relative to ``root``, fsspec info) of every object under the prefix ``root``, sorted.

    Raises:
        FileNotFoundError: no object lies under ``root``.
    """
    fs = filesystem(root)
    base = fs._strip_protocol(root).rstrip("/")
    found = fs.find(base, detail=True, withdirs=False)
    if not found:
        raise FileNotFoundError(f"no object under {root}")
    # Zero-byte "folder markers" some tools write (``key/``) are not documents.
    return sorted((key[len(base) + 1:], info) for key, info in found.items()
                  if key.startswith(base + "/") and not key.endswith("/"))


def read_text(url: str) -> str | None:
    """A small object's text (``.citelineignore``), or None when there is none."""
    try:
        return filesystem(url).cat_file(url).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None


def is_transient_store_error(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from) says the store or the network
    failed for a while, not the object: a timeout, a reset or refused connection, throttling
    or a 5xx. botocore's and s3fs's own retries came first; these are the ones they gave up on.

    >>> from botocore.exceptions import ClientError, EndpointConnectionError
    >>> slow = ClientError({"Error": {"Code": "SlowDown"}, "ResponseMetadata": {"HTTPStatusCode": 503}}, "GetObject")
    >>> denied = ClientError({"Error": {"Code": "AccessDenied"}, "ResponseMetadata": {"HTTPStatusCode": 403}}, "GetObject")
    >>> wrapped = OSError(errno.EBUSY, "Please reduce your request rate."); wrapped.__cause__ = slow
    >>> [is_transient_store_error(e) for e in (wrapped, denied, EndpointConnectionError(endpoint_url="x"),
    ...                                         ConnectionResetError(), ValueError("bad"))]
    [True, False, True, True, False]
    """
    from botocore.exceptions import BotoCoreError, ClientError, ConnectionError as BotoConnectionError, HTTPClientError

    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, (TimeoutError, FSTimeoutError, ConnectionError, BotoConnectionError, HTTPClientError)):
            return True
        if isinstance(exc, ClientError):
            response = exc.response or {}
            status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            return status in TRANSIENT_STATUS or response.get("Error", {}).get("Code") in TRANSIENT_CODES
        if isinstance(exc, BotoCoreError) and "timeout" in type(exc).__name__.lower():
            return True
        if _is_aiohttp_client_error(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _is_aiohttp_client_error(exc: BaseException) -> bool:
    """aiohttp's connection and payload errors (s3fs's transport): a dropped or cut-off response."""
    try:
        from aiohttp import ClientConnectionError, ClientPayloadError
    except ImportError:  # s3fs without aiohttp: nothing of it to recognise
        return False
    return isinstance(exc, (ClientConnectionError, ClientPayloadError))


def read_object(url: str, max_bytes: int) -> tuple[bytes, dict]:
    """An object's bytes and the info (size, ETag, LastModified) of exactly those bytes.

    s3fs pins every read of an open file to the ETag it saw on opening (``IfMatch``),
    so an object replaced mid-read fails instead of mixing two versions.

    Raises:
        Vanished: the object is gone, or was replaced while it was read.
        StoreUnavailable: the store or the network failed for a while (``is_transient_store_error``);
            the task's retries try again, with a growing delay.
        Unreadable: access denied.
        TooLarge: over ``max_bytes`` (nothing is downloaded).
    """
    with open_object(url, max_bytes) as (handle, info):
        with _store_errors():
            data = handle.read()
    if len(data) != info["size"]:
        raise Vanished(f"the object changed while it was being read ({info['size']:,} bytes listed, "
                       f"{len(data):,} read); it is read again on the next attempt")
    return data, info


@contextmanager
def open_object(url: str, max_bytes: int) -> Iterator[tuple[BinaryIO, dict]]:
    """The object opened for ranged reads (each ``read`` one GET of exactly those bytes, pinned to
    the ETag seen on opening) and its info; nothing is downloaded until read.

    Raises:
        As ``read_object``; a read of the handle raises s3fs's own errors (``_store_errors`` maps them).
    """
    assert is_remote(url), url
    with _store_errors():
        with filesystem(url).open(url, "rb", cache_type="none") as handle:
            info = dict(handle.details)
            if info["size"] > max_bytes:
                raise TooLarge(f"{info['size']:,} bytes is over the {max_bytes:,}-byte limit (--max-bytes); "
                               "the object was not read")
            yield handle, info


@contextmanager
def _store_errors() -> Iterator[None]:
    try:
        yield
    except DocumentError:
        raise
    except FileNotFoundError:
        raise Vanished("the object disappeared before it could be read") from None
    except PermissionError as exc:
        raise Unreadable(f"access denied: {exc}") from None
    except Exception as exc:  # safe: only a store's transient failure or a new version is mapped; the rest re-raised
        if _is_file_expired(exc):
            raise Vanished("the object changed while it was being read; it is read again on the next attempt") from None
        if is_transient_store_error(exc):
            raise StoreUnavailable(f"the object store failed while it was read ({type(exc).__name__}: {exc}); "
                                   "it is read again on the next attempt") from exc
        raise


def _is_file_expired(exc: BaseException) -> bool:
    """s3fs's FileExpired: a new version of the object since it was opened (the read pins its ETag)."""
    from s3fs.utils import FileExpired

    return isinstance(exc, FileExpired)
