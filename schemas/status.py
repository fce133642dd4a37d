"""Per-document outcomes: data, not exceptions, so a folder run can report them all."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, StrEnum


class DocStatus(StrEnum):
    """A document record's ``status`` column (a StrEnum: it formats as its value in SQL)."""

    INDEXED = "indexed"
    FAILED = "failed"
    SKIPPED = "skipped"  # a run's outcome only (read, found unchanged), never a stored status
    # no document (an archive, source code, a photo with no text): set aside, not failed, with
    # what it is as its reason; read again only when it changes (pipeline/plan.py)
    NOT_DOCUMENT = "not-a-document"


# How a set-aside file's stored reason begins: "not a document: Python source".
NOT_A_DOCUMENT = "not a document: "


class Stage(str, Enum):
    READ = "read"
    EXTRACT = "extract"
    CHUNK = "chunk"
    EMBED = "embed"
    WRITE = "write"


@dataclass(frozen=True)
class DocError:
    """Why one document failed: the stage it reached, the error's kind and message."""

    stage: str
    kind: str
    message: str

    def reason(self) -> str:
        return f"{self.kind}: {self.message}"


@dataclass(frozen=True)
class Outcome:
    """What happened to one document in one run."""

    path: str
    status: DocStatus
    chunks: int = 0
    truncated: int = 0
    encoded: int = 0  # chunk texts given to the encoder
    reused: int = 0  # chunks that kept a stored vector (their embedded text was unchanged)
    change: str = ""  # INDEXED: "new", "changed", or "renamed" (another document lent its bytes' work)
    lent_by: str | None = None  # renamed: the stored source it took its work from
    what: str = ""  # NOT_DOCUMENT: what the file is ("Python source")


@dataclass(frozen=True)
class Failure:
    """A failed document as operators see it (CLI, Prefect artifact)."""

    path: str
    stage: str
    reason: str
    attempts: int = 1
    source: str = ""  # as the index stores it (absolute, escaped): what ``retry-failed``'s path takes


@dataclass(frozen=True)
class NotDocument:
    """A file set aside as no document, as operators see it (CLI, status, Prefect artifact)."""

    path: str
    what: str  # "Python source", "an image with no text"


@dataclass(frozen=True)
class RunSummary:
    """The counts of one index run; ``rows`` is counted in the store after the run."""

    indexed: int = 0
    failed: int = 0
    skipped: int = 0
    deleted: int = 0
    chunks: int = 0
    truncated: int = 0
    rows: int = 0
    failures: tuple[Failure, ...] = ()
    encoded: int = 0  # of the chunks written: encoded by this run
    reused: int = 0  # of the chunks written: kept a stored vector (pipeline/reuse.py)
    # failed before and unchanged since (pipeline/plan.py ``is_still_failing``): not read again,
    # not counted in ``failed``, which holds only this run's new failures
    still_failing: int = 0
    # documents whose files were not listed but were not forgotten, each line naming the folder
    # and why (pipeline/plan.py ``Held``): a folder that could not be listed, or a mass deletion
    held: tuple[str, ...] = ()
    # what happened in words: of ``indexed``, new files, changed ones, and new paths that took a
    # stored document's work (``renamed``: its old path is gone; ``copied``: it is still there);
    # ``deleted`` counts the renamed files' old paths too, ``vanished`` only the files really gone
    new: int = 0
    restored: int = 0  # new here, of a document forgotten within the grace period: its vectors kept
    changed: int = 0
    renamed: int = 0
    copied: int = 0
    vanished: int = 0
    # every file of the run's folder that is no document (set aside this run or before), in path order
    not_documents: tuple[NotDocument, ...] = ()

    def words(self) -> str:
        """What the run did, as a person says it: "2 new, 1 changed, 1 renamed, 1 deleted,
        3 skipped as not documents" (only what happened; "nothing changed" when nothing did).

        >>> RunSummary(new=2, changed=1, renamed=1, vanished=1, not_documents=(NotDocument("a.py", "x"),)).words()
        '2 new, 1 changed, 1 renamed, 1 deleted, 1 skipped as not a document'
        """
        counts = [(self.new, "new"), (self.restored, "restored"), (self.changed, "changed"), (self.renamed, "renamed"), (self.copied, "copied"),
                  (self.vanished, "deleted"), (self.failed, "failed")]
        parts = [f"{n} {label}" for n, label in counts if n]
        if self.not_documents:
            n = len(self.not_documents)
            parts.append(f"{n} skipped as {'not a document' if n == 1 else 'not documents'}")
        return ", ".join(parts) or "nothing changed"

    def line(self) -> str:
        line = (
            f"indexed {self.indexed}, failed {self.failed}, skipped {self.skipped}, "
            f"deleted {self.deleted}; chunks written {self.chunks} "
            f"({self.encoded} encoded, {self.reused} kept their vectors; "
            f"{self.truncated} over the encoder window, truncated); rows in index {self.rows}"
        )
        if self.still_failing:
            line += (f"; {self.still_failing} still failing, unchanged since they failed "
                     "(not read again: `citeline retry` or the retry-failed deployment tries them)")
        if self.held:
            line += "; deletions held back, not forgotten (listed below)"
        return f"{line}. In words: {self.words()}"


# The names of a run's final states that commands tell apart.
# The final state's name when documents failed: a Failed-type state, drawn red in the runs list
# (a Completed "PartialSuccess" was drawn green, like a clean run). The CLI exits 3 on it.
DOCUMENTS_FAILED = "DocumentsFailed"
TOO_MANY_FAILED = "TooManyFailed"  # past --max-failed: the CLI exits 1
STOPPED = "Stopped"  # told to stop (SIGTERM, SIGINT): the CLI exits 128 + the signal's number
# Files not listed whose documents were kept (a folder that could not be listed, a root that came
# up empty, a mass deletion not allowed; citeline.pipeline.plan ``hold_deletions``): the CLI exits 4.
DELETIONS_HELD = "DeletionsHeld"


@dataclass(frozen=True)
class RunResult:
    """How a run ended, as a command reports it: its final state's name and message, whether
    that state is a failed one, and what the flow returned (a summary, a report, or the exception
    it ended with). Read from a Prefect state without importing Prefect, so a sync answered
    without a flow run (nothing changed) is reported the same way."""

    state: str
    message: str = ""
    value: object = None
    failed: bool = False

    @classmethod
    def of(cls, state) -> "RunResult":
        """The result of a Prefect ``State``."""
        return cls(state.name, state.message or "", state.result(raise_on_failure=False), state.is_failed())
