"""Reading a file that changes or disappears under the reader: refused, never mixed.

The races are made deterministic with an audit hook that acts at the moment the
reader opens the file (after its size check), on the real file system.
"""
import os
import sys

import pytest

from citeline.pipeline.prepare import read_source
from citeline.schemas.errors import TooLarge, Unreadable, Vanished


class AtOpen:
    """Runs ``action`` once, the first time ``path`` is opened by anyone."""

    hooked = False
    pending: dict = {}

    @classmethod
    def arm(cls, path, action):
        if not cls.hooked:
            sys.addaudithook(cls._hook)  # process-wide and permanent: keep it inert when unarmed
            cls.hooked = True
        cls.pending[str(path)] = action

    @classmethod
    def _hook(cls, event, args):
        if event != "citeline.open" or not cls.pending or not isinstance(args[0], (str, bytes, os.PathLike)):
            return
        action = cls.pending.pop(os.fsdecode(args[0]), None)
        if action is not None:
            action()


def test_a_file_growing_as_it_is_opened_is_refused_as_changed(tmp_path):
    path = tmp_path / "log.md"
    path.write_text("first line\n")
    AtOpen.arm(path, lambda: path.write_text("first line\nsecond line written by another program\n"))
    with pytest.raises(Vanished, match="changed while it was being read") as caught:
        read_source(str(path), 1 << 20)
    assert caught.value.transient  # retried by the task, or picked up by the next sync
    assert read_source(str(path), 1 << 20).endswith(b"another program\n")


def test_a_file_replaced_as_it_is_opened_is_refused_as_changed(tmp_path):
    path, new = tmp_path / "doc.md", tmp_path / "doc.md.tmp"
    path.write_text("version one\n")
    new.write_text("version two\n")  # same size: only the inode tells them apart
    AtOpen.arm(path, lambda: os.replace(new, path))
    with pytest.raises(Vanished, match="changed while it was being read"):
        read_source(str(path), 1 << 20)


def test_a_file_removed_as_it_is_opened_has_vanished(tmp_path):
    path = tmp_path / "gone.md"
    path.write_text("soon gone\n")
    AtOpen.arm(path, path.unlink)
    with pytest.raises(Vanished, match="disappeared before it could be read"):
        read_source(str(path), 1 << 20)


def test_a_file_over_the_limit_is_refused_before_it_is_opened(tmp_path):
    path = tmp_path / "huge.txt"
    with open(path, "wb") as handle:
        handle.truncate(200 * 1024 * 1024)  # sparse
    opened = []
    AtOpen.arm(path, lambda: opened.append(True))
    with pytest.raises(TooLarge, match="was not read"):
        read_source(str(path), 100 * 1024 * 1024)
    AtOpen.pending.pop(str(path), None)
    assert opened == []


def test_a_pipe_is_refused_without_being_opened(tmp_path):
    """A record's path can become a FIFO between runs; opening it would block the run."""
    path = tmp_path / "notes.md"
    os.mkfifo(path)
    with pytest.raises(Unreadable, match="not a regular file"):
        read_source(str(path), 1 << 20)


def test_a_pipe_swapped_in_as_the_file_is_opened_cannot_block_the_read(tmp_path):
    path = tmp_path / "notes.md"
    path.write_text("a regular file when it was checked\n")

    def swap():
        path.unlink()
        os.mkfifo(path)

    AtOpen.arm(path, swap)
    with pytest.raises(Vanished, match="changed while it was being read"):
        read_source(str(path), 1 << 20)


@pytest.mark.skipif(os.geteuid() != 0, reason="only needed where the suite runs as root")
def test_no_read_permission_as_an_unprivileged_user():
    """Root reads through chmod 000, so the read runs in a child that drops to nobody
    after importing (the interpreter itself may live where nobody can read)."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as folder:  # in /tmp, so only the file's own mode stops nobody
        os.chmod(folder, 0o755)
        path = os.path.join(folder, "locked.md")
        with open(path, "w") as handle:
            handle.write("nobody may read this\n")
        os.chmod(path, 0)
        code = ("import os\n"
                "from citeline.pipeline.prepare import read_source\n"
                "from citeline.schemas.errors import Unreadable\n"
                "os.setgid(65534); os.setuid(65534)\n"
                f"try: read_source({path!r}, 1 << 20)\n"
                "except Unreadable as e: print(e.kind, e)\n")
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert out.stdout.startswith("unreadable permission denied"), out.stderr


@pytest.fixture(params=["openat2", "per-component"])
def opener(request, monkeypatch):
    """Both ways of refusing links: the kernel's openat2, and O_NOFOLLOW per component."""
    from citeline.pipeline import beneath

    if request.param == "per-component":
        monkeypatch.setattr(beneath, "_has_openat2", False)
    elif beneath._has_openat2 is False:
        pytest.skip("openat2 is not available on this kernel")
    return request.param


@pytest.fixture
def tree(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "sub" / "a.md").write_text("inside the root\n")
    (outside / "a.md").write_text("SECRET from outside the root\n")
    return root, outside


def test_a_file_swapped_for_a_symlink_is_refused(tree, opener):
    root, outside = tree
    path = root / "sub" / "a.md"
    path.unlink()
    path.symlink_to(outside / "a.md")
    with pytest.raises(Unreadable, match="symbolic link"):
        read_source(str(path), 1 << 20, str(root))


def test_a_folder_swapped_for_a_symlink_is_refused(tree, opener):
    root, outside = tree
    (root / "sub" / "a.md").unlink()
    (root / "sub").rmdir()
    (root / "sub").symlink_to(outside)
    with pytest.raises(Unreadable, match="symbolic link"):
        read_source(str(root / "sub" / "a.md"), 1 << 20, str(root))


def test_a_file_swapped_for_a_symlink_as_it_is_opened_is_refused(tree, opener):
    """The swap lands between the size check and the open: the open itself must refuse."""
    root, outside = tree
    path = root / "sub" / "a.md"

    def swap():
        path.unlink()
        path.symlink_to(outside / "a.md")

    AtOpen.arm(path, swap)
    with pytest.raises(Unreadable, match="symbolic link"):
        read_source(str(path), 1 << 20, str(root))


def test_a_regular_file_under_the_root_is_read(tree, opener):
    root, _ = tree
    assert read_source(str(root / "sub" / "a.md"), 1 << 20, str(root)) == b"inside the root\n"


@pytest.mark.parametrize("swapped", ["root", "its parent"])
def test_a_root_swapped_for_a_symlink_is_refused(tmp_path, opener, swapped):
    """`citeline retry` reads a path stored under a root resolved long ago: the root (or a folder
    above it) replaced by a link to another tree was followed."""
    synced, other = tmp_path / "home" / "synced", tmp_path / "other" / "synced"
    synced.mkdir(parents=True)
    other.mkdir(parents=True)
    (synced / "a.md").write_text("inside the root\n")
    (other / "a.md").write_text("SECRET from another tree\n")
    path, root = str(synced / "a.md"), str(synced)
    moved = synced if swapped == "root" else synced.parent
    moved.rename(tmp_path / "was")
    moved.symlink_to(other if swapped == "root" else other.parent)
    with pytest.raises(Unreadable, match="symbolic link"):
        read_source(path, 1 << 20, root)
