"""Download and extract DAVIS-2017 videos: the pieces of ``python -m agents.videos fetch --to DIR``
(:func:`agents.videos.fetch`, which knows which videos a run uses).

:func:`agents.videos.fetch` downloads the DAVIS 2017 trainval 480p archive (the one distracting-control reads,
``DAVIS/JPEGImages/480p/<video>/00000.jpg``), resuming an interrupted transfer with an HTTP
``Range`` request (within one call, up to ``retries`` times, and across calls from the partial file
``DIR/DAVIS-2017-trainval-480p.zip.part``), checks its SHA-256 and extracts the JPEG frames of the
32 videos a run uses (:data:`agents.videos.TRAIN_VIDEOS`, :data:`agents.videos.EVAL_VIDEOS`) with
:func:`extract_videos` into
``DIR/DAVIS/JPEGImages/480p``: written into a temporary folder, then renamed into place, so a failed
call leaves no half-extracted folder. The archive is removed afterwards unless ``keep_archive``.

The pinned checksum (:data:`DAVIS_SHA256`, with the size :data:`DAVIS_BYTES`) is the one TensorFlow
Datasets records for this URL in its DAVIS dataset's ``checksums.tsv``; it has not been checked
against a download here. A mirror (``--url``) of the same archive has the same checksum; another
archive needs its own ``--sha256``.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import shutil
import urllib.error
import urllib.request
import zipfile
from pathlib import Path, PurePosixPath
from typing import Callable

from bisimkit.errors import InputError
from bisimkit.files import staged_folder

DAVIS_URL = "https://data.vision.ee.ethz.ch/csergi/share/davis/DAVIS-2017-trainval-480p.zip"
#: SHA-256 and size of DAVIS_URL as TensorFlow Datasets records them (tensorflow_datasets/video/davis/checksums.tsv).
DAVIS_SHA256 = "e3d0b5b77c3d031b000a19e0e25e3e2cac65d183755601bc2cf066df1a2aa492"
DAVIS_BYTES = 832_766_765
ARCHIVE = "DAVIS-2017-trainval-480p.zip"
#: Where the frames of a video sit inside the archive (and under ``DIR`` after extraction).
FRAMES_PREFIX = "DAVIS/JPEGImages/480p"
CHUNK = 1 << 20


class DownloadError(InputError):
    """A download that did not complete or did not verify (one line; the command exits 2)."""


def sha256_of(path: Path) -> str:
    """The SHA-256 of a file, hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def check_sha256(value: str) -> str:
    value = value.strip().lower()
    if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise InputError(f"{value!r} is not a SHA-256 (64 hexadecimal digits)", param="sha256")
    return value


def download(
    url: str,
    part: Path,
    retries: int = 5,
    timeout: float = 60.0,
    progress: Callable[[int, int | None], None] | None = None,
) -> Path:
    """Download ``url`` into ``part``, continuing from the bytes ``part`` already holds with a ``Range``
    request (a server that ignores it, answering 200, restarts the file); an interrupted transfer is
    resumed up to ``retries`` times. Returns ``part`` once the server has sent every byte."""
    attempts = 0
    while True:
        have = part.stat().st_size if part.exists() else 0
        request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                if response.status == 206:
                    mode, done = "ab", have
                else:  # 200: the whole file
                    mode, done = "wb", 0
                length = response.headers.get("Content-Length")
                total = done + int(length) if length is not None else None
                with open(part, mode) as f:
                    while block := response.read(CHUNK):
                        f.write(block)
                        done += len(block)
                        if progress:
                            progress(done, total)
                if total is not None and done < total:
                    raise http.client.IncompleteRead(b"", total - done)
                return part
        except urllib.error.HTTPError as exc:
            if exc.code == 416 and have:  # nothing left to send: the partial file is whole
                return part
            raise DownloadError(f"{url} answered HTTP {exc.code} {exc.reason}", param="url") from None
        except (http.client.IncompleteRead, ConnectionError, TimeoutError, urllib.error.URLError, OSError) as exc:
            if isinstance(exc, urllib.error.URLError) and not part.exists():
                raise DownloadError(f"cannot reach {url}: {exc.reason}", param="url") from None
            attempts += 1
            if attempts > retries:
                held = part.stat().st_size if part.exists() else 0
                raise DownloadError(
                    f"the transfer of {url} broke off {retries + 1} times ({held:,} bytes kept in "
                    f"{part}); run the same command again to resume",
                    param="url",
                ) from None


def _video_members(archive: zipfile.ZipFile, names: tuple[str, ...]) -> dict[str, list[zipfile.ZipInfo]]:
    """The JPEG members of each video in ``names`` (``DAVIS/JPEGImages/480p/<video>/<frame>.jpg``)."""
    found: dict[str, list[zipfile.ZipInfo]] = {name: [] for name in names}
    for info in archive.infolist():
        path = PurePosixPath(info.filename)
        if info.is_dir() or len(path.parts) != 5 or "/".join(path.parts[:3]) != FRAMES_PREFIX:
            continue
        video, frame = path.parts[3], path.parts[4]
        if video in found and frame.lower().endswith((".jpg", ".jpeg")) and frame == os.path.basename(frame):
            found[video].append(info)
    return found


def extract_videos(archive_path: Path, dest: Path, names: tuple[str, ...]) -> Path:
    """Extract the frames of ``names`` from the archive into ``dest/DAVIS/JPEGImages/480p`` (written aside,
    then renamed into place); returns ``dest/DAVIS``. A video missing from the archive is an error and
    nothing is extracted."""
    try:
        archive = zipfile.ZipFile(archive_path)
    except zipfile.BadZipFile:
        raise DownloadError(f"{archive_path} is not a zip archive", param="archive") from None
    with archive:
        members = _video_members(archive, names)
        missing = [name for name, found in members.items() if not found]
        if missing:
            raise DownloadError(
                f"{archive_path} holds no {FRAMES_PREFIX}/<video>/*.jpg for {len(missing)} of the "
                f"{len(names)} videos ({', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''})",
                param="archive",
            )
        final = dest / "DAVIS"
        with staged_folder(final, existing="replace") as tmp:
            for video, infos in members.items():
                folder = tmp / "JPEGImages" / "480p" / video
                folder.mkdir(parents=True)
                for info in infos:
                    with archive.open(info) as src, open(folder / PurePosixPath(info.filename).name, "wb") as out:
                        shutil.copyfileobj(src, out, CHUNK)
    return final
