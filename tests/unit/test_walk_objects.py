"""Keys on object storage are selected as paths are: hidden and excluded parents hide what lies under them."""
from datetime import datetime, timezone

import pathspec

from citeline.pipeline.walk import DEFAULT_EXCLUDE, FileStat, _object_kept


def spec(*lines: str) -> pathspec.PathSpec:
    return pathspec.GitIgnoreSpec.from_lines([*DEFAULT_EXCLUDE, *lines])


def test_hidden_and_excluded_parents_hide_their_keys():
    excluded = spec("drafts/")
    assert _object_kept("notes/a.md", excluded, None)
    assert not _object_kept(".git/config.md", excluded, None)
    assert not _object_kept("notes/.hidden/a.md", excluded, None)
    assert not _object_kept("lib/node_modules/x/readme.md", excluded, None)
    assert not _object_kept("drafts/sub/a.md", excluded, None)


def test_a_file_under_an_excluded_folder_stays_out_even_when_re_included():
    excluded = spec("drafts/", "!drafts/keep.md")  # as git: a file under an excluded folder cannot come back
    assert not _object_kept("drafts/keep.md", excluded, None)


def test_include_keeps_only_matching_keys():
    included = pathspec.GitIgnoreSpec.from_lines(["*.pdf"])
    assert _object_kept("a/b.pdf", spec(), included) and not _object_kept("a/b.md", spec(), included)


def test_an_objects_stat_changes_with_its_etag_and_marks_no_device():
    info = {"size": 5, "LastModified": datetime(2026, 1, 2, tzinfo=timezone.utc), "ETag": '"abc"'}
    first, second = FileStat.of_object(info), FileStat.of_object({**info, "ETag": '"abd"'})
    assert first.size == 5 and first.mtime_ns == 1_767_312_000 * 10**9 and first.device == 0
    assert 0 <= first.inode < 2**63 and first.inode != second.inode
