"""Which files a sync considers: defaults, .citelineignore, --include/--exclude; nothing excluded is walked."""
import os
import sys
from pathlib import Path

import pytest

from citeline.pipeline.walk import Selection, check_patterns, list_files


def tree(root: Path, *paths: str) -> Path:
    for rel in paths:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"# {rel}\n")
    return root


def listed(root: Path, selection: Selection = Selection()) -> list[str]:
    return [f.path for f in list_files(root, selection)]


class Walked:
    """Folders os.walk lists (its ``os.scandir`` audit event); the hook is permanent, inert when unwatched."""

    hooked = False
    seen: list[str] | None = None

    @classmethod
    def watch(cls) -> list[str]:
        if not cls.hooked:
            sys.addaudithook(lambda event, args: cls.seen is not None and event == "os.scandir"
                             and cls.seen.append(os.fsdecode(args[0])))
            cls.hooked = True
        cls.seen = []
        return cls.seen


def test_defaults_skip_dependency_and_vcs_folders(tmp_path):
    root = tree(tmp_path, "a.md", "node_modules/pkg/readme.md", "src/__pycache__/x.md", "venv/lib/y.md",
                ".git/HEAD", "docs/b.md")
    assert listed(root) == ["a.md", "docs/b.md"]


def test_excluded_folders_are_not_walked(tmp_path):
    root = tree(tmp_path, "a.md", "node_modules/deep/er/c.md", "build/out.md")
    (root / ".citelineignore").write_text("build/\n")
    walked = Walked.watch()
    try:
        assert listed(root) == ["a.md"]
    finally:
        Walked.seen = None
    assert not [w for w in walked if "node_modules" in w or "build" in w]


def test_citelineignore_has_gitignore_semantics(tmp_path):
    root = tree(tmp_path, "a.md", "notes.tmp", "keep.tmp", "drafts/x.md", "sub/drafts/y.md", "sub/z.md", "docs/c.md")
    (root / ".citelineignore").write_text("# comment\n*.tmp\n!keep.tmp\n/drafts/\ndocs\n")
    assert listed(root) == ["a.md", "keep.tmp", "sub/z.md", "sub/drafts/y.md"]


def test_include_and_exclude_options(tmp_path):
    root = tree(tmp_path, "a.md", "b.txt", "sub/c.md", "sub/d.pdf", "node_modules/e.md")
    assert listed(root, Selection(include=("*.md",))) == ["a.md", "sub/c.md"]
    assert listed(root, Selection(exclude=("sub/",))) == ["a.md", "b.txt"]
    assert listed(root, Selection(include=("*.md",), exclude=("sub/c.md",))) == ["a.md"]
    assert listed(root, Selection(exclude=("!node_modules/",))) == ["a.md", "b.txt", "node_modules/e.md",
                                                                    "sub/c.md", "sub/d.pdf"]


def test_a_file_named_on_its_own_is_listed_whatever_the_patterns(tmp_path):
    root = tree(tmp_path, "node_modules/a.md")
    assert [f.path for f in list_files(root / "node_modules" / "a.md", Selection(exclude=("*.md",)))] == ["a.md"]


def test_every_listed_file_carries_its_stat(tmp_path):
    root = tree(tmp_path, "a.md")
    (found,) = list_files(root)
    st = (root / "a.md").stat()
    assert (found.stat.size, found.stat.mtime_ns, found.stat.inode, found.stat.device) == (
        st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)


@pytest.mark.parametrize("pattern", ["!", "\\"])
def test_malformed_patterns_are_refused_with_the_pattern(tmp_path, pattern):
    with pytest.raises(ValueError, match="not a gitignore-style pattern"):
        check_patterns(Selection(exclude=(pattern,)))
    root = tree(tmp_path, "a.md")
    (root / ".citelineignore").write_text(f"*.tmp\n{pattern}\n")
    with pytest.raises(ValueError, match=r"\.citelineignore, line 2"):
        list_files(root)
