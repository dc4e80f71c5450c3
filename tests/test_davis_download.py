"""DAVIS's archive: checksums, and the extraction of the used videos' frames only, staged and renamed into
place."""

import hashlib
import io
import zipfile

import pytest

from agents.davis_download import DownloadError, check_sha256, extract_videos, sha256_of
from bisimkit.errors import InputError


def test_checksums(tmp_path):
    (tmp_path / "a").write_bytes(b"abc")
    assert sha256_of(tmp_path / "a") == hashlib.sha256(b"abc").hexdigest()
    assert check_sha256(" " + "AB" * 32 + "\n") == "ab" * 32
    with pytest.raises(InputError, match=r"^sha256: 'xyz' is not a SHA-256 \(64 hexadecimal digits\)$"):
        check_sha256("xyz")


def archive(path, videos):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for video in videos:
            z.writestr(f"DAVIS/JPEGImages/480p/{video}/00000.jpg", b"jpeg " + video.encode())
        z.writestr("DAVIS/Annotations/480p/bear/00000.png", b"mask")
    path.write_bytes(buffer.getvalue())
    return path


def test_only_the_asked_videos_are_extracted(tmp_path):
    root = extract_videos(archive(tmp_path / "d.zip", ["bear", "boat", "dog"]), tmp_path / "out", ("bear", "dog"))
    assert root == tmp_path / "out" / "DAVIS"
    frames = root / "JPEGImages" / "480p"
    assert sorted(p.name for p in frames.iterdir()) == ["bear", "dog"]
    assert (frames / "dog" / "00000.jpg").read_bytes() == b"jpeg dog"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["DAVIS"]  # nothing staged is left


def test_a_missing_video_or_a_broken_archive_extracts_nothing(tmp_path):
    with pytest.raises(
        DownloadError,
        match=r"^archive: .*d\.zip holds no DAVIS/JPEGImages/480p/<video>/\*\.jpg "
        r"for 1 of the 2 videos \(cat\)$",
    ):
        extract_videos(archive(tmp_path / "d.zip", ["bear"]), tmp_path / "out", ("bear", "cat"))
    (tmp_path / "bad.zip").write_bytes(b"not a zip")
    with pytest.raises(DownloadError, match=r"^archive: .*bad\.zip is not a zip archive$"):
        extract_videos(tmp_path / "bad.zip", tmp_path / "out", ("bear",))
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
