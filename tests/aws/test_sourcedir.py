import io
import os
import tarfile

from mlscale.aws.sourcedir import pack_source_dir


def test_same_files_same_archive_and_hash(tmp_path):
    (tmp_path / "train.py").write_text("print('hi')\n")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "util.py").write_text("X = 1\n")
    first = pack_source_dir(tmp_path)
    later = (tmp_path / "train.py").stat().st_mtime + 60
    os.utime(tmp_path / "train.py", (later, later))  # a new mtime alone changes nothing
    assert pack_source_dir(tmp_path) == first


def test_changed_content_changes_hash(tmp_path):
    (tmp_path / "train.py").write_text("print('a')\n")
    _, before = pack_source_dir(tmp_path)
    (tmp_path / "train.py").write_text("print('b')\n")
    assert pack_source_dir(tmp_path)[1] != before


def test_archive_holds_the_files_at_its_root_without_caches(tmp_path):
    (tmp_path / "train.py").write_text("x")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "train.cpython-311.pyc").write_bytes(b"\0")
    archive, _ = pack_source_dir(tmp_path)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        assert tar.getnames() == ["train.py"]
