"""Listing a hostile folder: only regular files inside the root are documents."""
import os

from citeline.pipeline.walk import list_files


def test_loops_pipes_and_links_are_not_listed(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "ok.md").write_text("a document\n")
    (root / "loop-a.md").symlink_to(root / "loop-b.md")
    (root / "loop-b.md").symlink_to(root / "loop-a.md")
    (root / "self.md").symlink_to(root / "self.md")
    (root / "dangling.md").symlink_to(tmp_path / "nowhere.md")
    (outside / "secret.md").write_text("outside the root\n")
    (root / "escape.md").symlink_to(outside / "secret.md")
    (root / "inside.md").symlink_to(root / "ok.md")
    os.mkfifo(root / "pipe.md")
    assert [f.path for f in list_files(root)] == ["ok.md"]  # a link inside the root only repeats its target
