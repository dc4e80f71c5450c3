"""``python -m agents.videos fetch``: download, resume, checksum and extraction of DAVIS-2017, end to end
against an HTTP server on 127.0.0.1 (a thread of this test) serving a small archive of the real one's
layout; it can break transfers off mid-way and ignore ``Range``."""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agents.videos import EVAL_VIDEOS, TRAIN_VIDEOS, main, resolve_videos

ROOT = Path(__file__).resolve().parents[2]
USED = TRAIN_VIDEOS + EVAL_VIDEOS


def make_archive(videos=USED + ("boat",), frames: int = 3) -> bytes:
    """A zip laid out as DAVIS-2017-trainval-480p.zip: JPEG frames per video, annotations, a readme; 'boat'
    is a training video a run does not use."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr("DAVIS/README.md", "DAVIS 2017\n")
        z.writestr("DAVIS/ImageSets/2017/val.txt", "\n".join(EVAL_VIDEOS) + "\n")
        for video in videos:
            for k in range(frames):
                z.writestr(f"DAVIS/JPEGImages/480p/{video}/{k:05d}.jpg", f"\xff\xd8 {video} {k}".encode() * 40)
                z.writestr(f"DAVIS/Annotations/480p/{video}/{k:05d}.png", b"png")
    return buf.getvalue()


class Server:
    """Serves ``data`` at /DAVIS.zip with Range support; ``truncate`` responses are cut at a third of
    their body; ``ignore_range`` answers 200 with the whole file; ``ranges`` records each Range header."""

    def __init__(self, data: bytes):
        self.data, self.truncate, self.ignore_range, self.ranges = data, 0, False, []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                header = self.headers.get("Range")
                outer.ranges.append(header)
                start = int(header.split("=")[1].split("-")[0]) if header and not outer.ignore_range else 0
                if start >= len(outer.data):
                    self.send_response(416)
                    self.end_headers()
                    return
                body = outer.data[start:]
                self.send_response(206 if start else 200)
                self.send_header("Content-Length", str(len(body)))
                if start:
                    self.send_header("Content-Range", f"bytes {start}-{len(outer.data) - 1}/{len(outer.data)}")
                self.end_headers()
                if outer.truncate > 0:
                    outer.truncate -= 1
                    self.wfile.write(body[: len(body) // 3])
                    self.close_connection = True
                    return
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/DAVIS.zip"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = Server(make_archive())
    yield s
    s.close()


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def leftovers(dest: Path) -> list[str]:
    return sorted(p.name for p in dest.iterdir()) if dest.exists() else []


def test_fetch_resumes_a_broken_transfer_verifies_and_extracts_only_the_used_videos(server, tmp_path):
    server.truncate = 1
    dest = tmp_path / "data"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "agents.videos",
            "fetch",
            "--to",
            str(dest),
            "--url",
            server.url,
            "--sha256",
            digest(server.data),
            "--quiet",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    cut = (len(server.data)) // 3
    assert server.ranges == [None, f"bytes={cut}-"]  # the second request continued where the first broke off
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(
        f"DAVIS-2017: the frames of 2 training and 30 held-out videos are in {dest / 'DAVIS' / 'JPEGImages' / '480p'}"
    )
    assert lines[1] == f"train on them with --davis {dest / 'DAVIS'} (or export BISIMKIT_DAVIS={dest / 'DAVIS'})"
    frames = dest / "DAVIS" / "JPEGImages" / "480p"
    assert sorted(p.name for p in frames.iterdir()) == sorted(USED)  # not 'boat'
    assert leftovers(dest) == ["DAVIS"] and leftovers(dest / "DAVIS") == ["JPEGImages"]  # no annotations, no zip
    with zipfile.ZipFile(io.BytesIO(server.data)) as z:
        assert (frames / "bear" / "00002.jpg").read_bytes() == z.read("DAVIS/JPEGImages/480p/bear/00002.jpg")
    source = resolve_videos(dest / "DAVIS")
    assert source.kind == "davis" and len(source.videos("eval")) == 30 and len(source.videos("train")) == 2
    # a second call finds the frames there and downloads nothing
    requests = len(server.ranges)
    assert main(["fetch", "--to", str(dest), "--url", server.url, "--quiet"]) == 0
    assert len(server.ranges) == requests


def test_wrong_checksum_is_one_line_exit_2_and_nothing_extracted(server, tmp_path, capsys):
    dest = tmp_path / "data"
    assert main(["fetch", "--to", str(dest), "--url", server.url, "--sha256", "0" * 64, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        f"error: --sha256: DAVIS-2017-trainval-480p.zip has SHA-256 {digest(server.data)}, expected {'0' * 64}"
    )
    assert leftovers(dest) == []  # no archive, no DAVIS/, no temporary folder
    # without --sha256 a mirror is checked against the official archive's pinned checksum
    assert main(["fetch", "--to", str(dest), "--url", server.url, "--quiet"]) == 2
    assert "expected e3d0b5b77c3d031b000a19e0e25e3e2cac65d183755601bc2cf066df1a2aa492" in capsys.readouterr().err


def test_a_transfer_that_keeps_breaking_is_resumed_by_the_next_call(server, tmp_path, capsys):
    dest = tmp_path / "data"
    server.truncate = 10
    args = ["fetch", "--to", str(dest), "--url", server.url, "--sha256", digest(server.data), "--quiet"]
    assert main(args + ["--retries", "1"]) == 2
    err = capsys.readouterr().err
    part = dest / "DAVIS-2017-trainval-480p.zip.part"
    assert err.count("\n") == 1 and "broke off 2 times" in err and "run the same command again to resume" in err
    assert leftovers(dest) == [part.name] and 0 < part.stat().st_size < len(server.data)
    held = part.stat().st_size
    server.truncate = 0
    assert main(args) == 0
    assert server.ranges[-1] == f"bytes={held}-"
    assert leftovers(dest) == ["DAVIS"]


def test_a_server_that_ignores_range_restarts_the_file(server, tmp_path):
    server.truncate, server.ignore_range = 1, True
    dest = tmp_path / "data"
    assert main(["fetch", "--to", str(dest), "--url", server.url, "--sha256", digest(server.data), "--quiet"]) == 0
    assert len(server.ranges) == 2 and server.ranges[1] is not None  # asked for a range, got the whole file
    assert (dest / "DAVIS" / "JPEGImages" / "480p" / "soapbox").is_dir()


def test_an_archive_without_a_used_video_extracts_nothing(tmp_path, capsys):
    s = Server(make_archive(videos=USED[:-1]))
    try:
        dest = tmp_path / "data"
        assert main(["fetch", "--to", str(dest), "--url", s.url, "--sha256", digest(s.data), "--quiet"]) == 2
    finally:
        s.close()
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "holds no DAVIS/JPEGImages/480p/<video>/*.jpg for 1 of the 32 videos (soapbox)" in err
    assert "DAVIS" not in leftovers(dest) and not any(n.startswith(".DAVIS") for n in leftovers(dest))


@pytest.mark.parametrize(
    "args, start",
    [
        (["--sha256", "xyz"], "error: --sha256: 'xyz' is not a SHA-256"),
        (["--retries", "-1"], "error: --retries: -1 is not a non-negative integer"),
        (["--url", "http://127.0.0.1:9/none.zip"], "error: --url: cannot reach http://127.0.0.1:9/none.zip"),
    ],
)
def test_bad_arguments_are_one_line(tmp_path, capsys, args, start):
    assert main(["fetch", "--to", str(tmp_path / "d"), "--quiet", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith(start) and err.count("\n") == 1


def test_to_a_file_is_refused(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    assert main(["fetch", "--to", str(tmp_path / "f"), "--quiet"]) == 2
    assert capsys.readouterr().err.startswith("error: --to: ")
