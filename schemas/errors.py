"""Errors. A DocumentError fails one document; anything else is a bug and stops the run."""
from __future__ import annotations


class CitelineError(Exception):
    """Base of every error citeline raises on purpose."""


class DocumentError(CitelineError):
    """Bad input: this document fails with a reason, the others go on."""

    kind = "unreadable"
    transient = False


class Unreadable(DocumentError):
    kind = "unreadable"


class Undecodable(DocumentError):
    kind = "undecodable"


class Encrypted(DocumentError):
    kind = "encrypted"


class NoText(DocumentError):
    kind = "no-text"


class TooLarge(DocumentError):
    kind = "too-large"


class OutOfMemory(TooLarge):
    """The extraction needed more memory than its worker's ceiling (``max_memory_bytes``): the
    document fails too-large, and the worker, which may hold half-built state, is replaced."""


class UnsupportedType(DocumentError):
    kind = "unsupported-type"


class NotADocument(UnsupportedType):
    """The file is no document: an archive, source code, a signature, a photo with no text, a
    recording with no speech. Its message is what it is, in a few words ("Python source").

    Not a failure: the run sets it aside (status ``not-a-document``), counts and lists it, and
    reads it again only when it changes. An UnsupportedType, so code that asks whether any
    extractor reads a file (``pipeline.prepare.is_known``) gets the same answer as before.
    """

    kind = "not-a-document"


class Vanished(DocumentError):
    """The file disappeared or changed while it was being read; the next run picks it up."""

    kind = "vanished"
    transient = True


class StoreUnavailable(DocumentError):
    """The object store or the network failed for a while (a timeout, a 5xx, throttling, a reset
    connection): the file is not at fault, so it is tried again, by the task's retries and by
    the next run, whether or not it changed."""

    kind = "store-unavailable"
    transient = True


class IndexMismatch(CitelineError):
    """The index was built with another embedding model, dimension or strategy."""


class NoIndex(IndexMismatch):
    """Nothing has been indexed at this location (a read-only command creates nothing there).

    An IndexMismatch, as ``Store.require_stamp`` raised for this case before.
    """


class IndexUnavailable(CitelineError):
    """A served index switched to a model this process cannot load: nothing is answered (503)
    until it is restarted, rather than from the table the index retired."""


class Unlistable(CitelineError):
    """A folder's listing cannot be trusted (its ``.citelineignore`` cannot be read): the sync
    stops before it indexes or forgets anything."""


class IndexBusy(CitelineError):
    """Another process holds the index's writer lock."""


class IndexUnwritable(CitelineError):
    """The index's folder cannot be created or its lock file opened (a path under a file, no permission)."""


class StorageRefused(CitelineError):
    """The storage under the index refused a write of a run's set-up (disk full, I/O error):
    the run stops before it reads or forgets any document."""


class PrefectHomeUnwritable(CitelineError):
    """Prefect's home cannot hold the temporary server's database (a full disk, no permission):
    said before the server starts, whose own failure is two minutes of retries and a timeout."""


class PrefectServerNotStarted(CitelineError):
    """Prefect's temporary server exited or did not answer within its startup timeout."""


class UnsupportedStore(CitelineError):
    """An index on an object store where citeline has no writer lock (only S3 has one)."""


class WriterLost(CitelineError):
    """This process no longer holds the index's writer lease (it ran out, or another writer took it over):
    the run stops before its next write."""


class LLMError(CitelineError):
    """The chat endpoint could not be reached or gave no usable answer."""


class Empty(DocumentError):
    """The file holds zero bytes."""

    kind = "empty"


class Corrupt(DocumentError):
    """The bytes are not a valid file of the type they claim (bad zip, broken PDF)."""

    kind = "corrupt"


class ParserFailed(DocumentError):
    """The parser library raised on this file something other than its usual "not readable" errors
    (python-pptx's ``NotImplementedError`` on an unrecognised shape, Pillow's ``SyntaxError``): the
    file is one the library cannot read, whether or not it is valid (pipeline/blame.py)."""

    kind = "parser-error"


class Unexpected(DocumentError):
    """citeline's own code raised on this file something it does not expect (a bug this file
    reveals, an extractor's ``KeyError``): the document fails alone with the exception and where
    it rose, and the run goes on (pipeline/blame.py ``contained``)."""

    kind = "unexpected-error"


class Truncated(DocumentError):
    """The file ends early: a PDF without its end, an MP4 without its moov atom."""

    kind = "truncated"


class Timeout(DocumentError):
    """Extraction ran past the per-document time limit (``ExtractOptions.time_limit_s``)."""

    kind = "timeout"
