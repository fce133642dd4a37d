"""Which fix each `citeline check` violation gets."""
from citeline.index.check import Violation
from citeline.index.repair import plan_repair


def test_each_violation_gets_its_safe_fix():
    known = {"doc-a", "doc-b", "doc-c"}
    plan = plan_repair([
        Violation("chunk_count", "a.md", "record says 3, store holds 1", "doc-a"),
        Violation("quote", "chunk-1", "canonical[0:9] differs from the stored content", "doc-b"),
        Violation("duplicate", "chunk-2", "2 rows share this chunk id", "doc-c"),
        Violation("orphan-chunks", "doc-z", "4 chunks belong to no document record", "doc-z"),
        Violation("norm", "chunk-9", "vector norm is 0.5000, not 1", "doc-gone"),
        Violation("full-text", "index", "the chunks table has no full-text index: BM25 finds nothing"),
        Violation("rows", "index", "sum of chunk_count is 3, rows are 1"),
    ], known)
    assert set(plan.reindex) == known
    assert plan.duplicates == ("chunk-2",)
    assert set(plan.orphans) == {"doc-z", "doc-gone"}  # a bad row of an unrecorded document is an orphan
    assert plan.full_text and plan.unfixable == ()


def test_a_rule_nobody_knows_how_to_fix_is_left_for_a_person():
    odd = Violation("stamp", "chunk-1", "row stamp differs", None)
    assert plan_repair([odd], set()).unfixable == (odd,)
