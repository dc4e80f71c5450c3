"""Background videos for the distracting backgrounds: a DAVIS-2017 folder or procedural ones.

DCS reads a video as a folder of JPEG frames, ``<root>/<video>/00000.jpg, ...``
(DAVIS-2017's ``JPEGImages/480p`` layout). The paper trains on 2 videos and
evaluates on 30 held-out ones; as in distracting-control, these are the first two
DAVIS-2017 training videos and the 30 validation videos.

DAVIS cannot be fetched everywhere, so this module also generates procedural
videos (moving shapes, textures and colour gradients; deterministic by seed)
under the same names in the same layout, cached on first use. Where the
backgrounds come from is resolved once, in this order: an explicit ``davis``
path (``--davis PATH``), the ``BISIMKIT_DAVIS`` environment variable, the
procedural cache (``BISIMKIT_CACHE`` or ``~/.cache/bisimkit``). A run logs
:meth:`VideoSource.describe` to say which one it used.

``python -m agents.videos fetch --to DIR`` downloads DAVIS-2017 (checksum verified, resumable) and
extracts the frames of these 32 videos into ``DIR/DAVIS`` (:mod:`agents.davis_download`).
"""

from __future__ import annotations

import argparse
import os
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from bisimkit.errors import InputError
from bisimkit.files import atomic_write_json, staged_folder
from bisimkit.progress import Progress

from .davis_download import (
    ARCHIVE,
    DAVIS_BYTES,
    DAVIS_SHA256,
    DAVIS_URL,
    DownloadError,
    check_sha256,
    download,
    extract_videos,
    sha256_of,
)

DAVIS_ENV = "BISIMKIT_DAVIS"
CACHE_ENV = "BISIMKIT_CACHE"
MANIFEST = "bisimkit-procedural.json"
PROCEDURAL_VERSION = 1

# The first two DAVIS-2017 training videos (what distracting-control takes with
# num_videos=2) and the 30 DAVIS-2017 validation videos.
TRAIN_VIDEOS: tuple[str, ...] = ("bear", "bmx-bumps")
EVAL_VIDEOS: tuple[str, ...] = (
    "bike-packing",
    "blackswan",
    "bmx-trees",
    "breakdance",
    "camel",
    "car-roundabout",
    "car-shadow",
    "cows",
    "dance-twirl",
    "dog",
    "dogs-jump",
    "drift-chicane",
    "drift-straight",
    "goat",
    "gold-fish",
    "horsejump-high",
    "india",
    "judo",
    "kite-surf",
    "lab-coat",
    "libby",
    "loading",
    "mbike-trick",
    "motocross-jump",
    "paragliding-launch",
    "parkour",
    "pigs",
    "scooter-black",
    "shooting",
    "soapbox",
)
SPLITS = {"train": TRAIN_VIDEOS, "eval": EVAL_VIDEOS}


def split_videos(split: str) -> tuple[str, ...]:
    """Video names of a split: ``'train'`` (2 videos) or ``'eval'`` (30 held-out videos)."""
    if split not in SPLITS:
        raise InputError(f"split: {split!r} is not one of {sorted(SPLITS)}")
    return SPLITS[split]


# --------------------------------------------------------------------------- procedural videos


def _bounce(start: np.ndarray, velocity: np.ndarray, t: int) -> np.ndarray:
    """Positions in [0, 1] moving at ``velocity`` and reflecting off the borders."""
    p = np.mod(start + velocity * t, 2.0)
    return np.where(p > 1.0, 2.0 - p, p)


def _pattern(rng: np.random.Generator, kind: str, xx: np.ndarray, yy: np.ndarray):
    """A moving texture in [0, 1]: a function of the frame index."""
    freq = rng.uniform(3.0, 12.0)
    theta = rng.uniform(0.0, np.pi)
    speed = rng.uniform(0.1, 0.5) * rng.choice([-1.0, 1.0])
    if kind == "stripes":
        u = np.cos(theta) * xx + np.sin(theta) * yy
        return lambda t: 0.5 + 0.5 * np.sin(2 * np.pi * freq * u - speed * 2 * np.pi * t / 8)
    if kind == "checker":
        vx, vy = rng.uniform(-0.02, 0.02, 2)
        return lambda t: ((np.floor((xx + vx * t) * freq) + np.floor((yy + vy * t) * freq)) % 2).astype(float)
    centres = rng.uniform(0, 1, (5, 2))
    velocities = rng.uniform(-0.03, 0.03, (5, 2))
    widths = rng.uniform(0.08, 0.25, 5)

    def blobs(t: int) -> np.ndarray:
        c = _bounce(centres, velocities, t)
        field = sum(np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * w * w)) for (cx, cy), w in zip(c, widths))
        return np.clip(field, 0.0, 1.0)

    return blobs


def _draw_shape(
    image: np.ndarray, kind: str, centre: np.ndarray, size: float, angle: float, colour: tuple[int, int, int]
) -> None:
    import cv2  # the agents' extra (OpenCV): only to read or write frames

    h, w = image.shape[:2]
    cx, cy = centre[0] * w, centre[1] * h
    r = size * min(h, w)
    if kind == "circle":
        cv2.circle(image, (int(cx), int(cy)), max(int(r), 1), colour, -1, cv2.LINE_AA)
        return
    corners = {"triangle": 3, "square": 4, "pentagon": 5}.get(kind, 4)
    a = angle + 2 * np.pi * np.arange(corners) / corners
    stretch = 1.8 if kind == "bar" else 1.0
    pts = np.stack([cx + stretch * r * np.cos(a), cy + r * np.sin(a) / stretch], axis=1)
    cv2.fillPoly(image, [np.round(pts).astype(np.int32)], colour, cv2.LINE_AA)


def procedural_video(seed: int, frames: int | None = None, height: int = 108, width: int = 192) -> np.ndarray:
    """A deterministic video (T, height, width, 3) uint8 of moving shapes over moving textures.

    A drifting two-colour gradient, a moving texture (stripes, checker or blobs)
    and 3 to 7 coloured shapes that translate, bounce and spin. ``frames``
    defaults to a seeded length in [40, 70] (DAVIS videos have 50 to 100).
    """
    rng = np.random.default_rng(seed)
    frames = int(rng.integers(40, 71)) if frames is None else int(frames)
    yy, xx = np.mgrid[0:height, 0:width].astype(float)
    yy, xx = yy / max(height, width), xx / max(height, width)
    c0, c1, c_tex = (rng.uniform(0, 255, 3) for _ in range(3))
    angle0, spin = rng.uniform(0, 2 * np.pi), rng.uniform(-0.08, 0.08)
    texture = _pattern(rng, str(rng.choice(["stripes", "checker", "blobs"])), xx, yy)
    alpha = rng.uniform(0.2, 0.6)
    n = int(rng.integers(3, 8))
    kinds = rng.choice(["circle", "triangle", "square", "pentagon", "bar"], n)
    starts, velocities = rng.uniform(0, 1, (n, 2)), rng.uniform(-0.04, 0.04, (n, 2))
    sizes, angles, spins = rng.uniform(0.06, 0.22, n), rng.uniform(0, 2 * np.pi, n), rng.uniform(-0.2, 0.2, n)
    colours = [tuple(int(c) for c in rng.integers(0, 256, 3)) for _ in range(n)]
    video = np.empty((frames, height, width, 3), np.uint8)
    for t in range(frames):
        a = angle0 + spin * t
        g = (np.cos(a) * xx + np.sin(a) * yy + 1.5) / 3.0
        tex = alpha * texture(t)[..., None]
        image = ((c0 + (c1 - c0) * g[..., None]) * (1 - tex) + c_tex * tex).astype(np.uint8)
        centres = _bounce(starts, velocities, t)
        for i in range(n):
            _draw_shape(image, str(kinds[i]), centres[i], sizes[i], angles[i] + spins[i] * t, colours[i])
        video[t] = image
    return video


def video_seed(name: str, seed: int) -> int:
    """The seed of procedural video ``name`` in a folder generated with ``seed``."""
    return int(np.random.SeedSequence([seed, zlib.crc32(name.encode())]).generate_state(1)[0])


def write_procedural(
    root: str | os.PathLike,
    names: Sequence[str] = TRAIN_VIDEOS + EVAL_VIDEOS,
    seed: int = 0,
    height: int = 108,
    width: int = 192,
) -> Path:
    """Write procedural videos as ``<root>/<name>/00000.jpg, ...`` plus a manifest; returns ``root``."""
    import cv2  # the agents' extra (OpenCV): only to read or write frames

    root = Path(root)
    for name in names:
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        for t, frame in enumerate(procedural_video(video_seed(name, seed), height=height, width=width)):
            ok, data = cv2.imencode(".jpg", frame[..., ::-1], [cv2.IMWRITE_JPEG_QUALITY, 90])
            if not ok:
                raise OSError(f"could not encode frame {t} of video {name}")
            (folder / f"{t:05d}.jpg").write_bytes(data.tobytes())
    atomic_write_json(
        root / MANIFEST,
        {
            "generator": "bisimkit procedural videos",
            "version": PROCEDURAL_VERSION,
            "seed": seed,
            "height": height,
            "width": width,
            "videos": list(names),
        },
    )
    return root


def cache_dir() -> Path:
    """Where procedural videos are cached: ``$BISIMKIT_CACHE/videos`` or ``~/.cache/bisimkit/videos``."""
    base = os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "bisimkit"
    return Path(base).expanduser() / "videos"


def ensure_procedural(root: str | os.PathLike | None = None, seed: int = 0) -> Path:
    """The procedural video folder, generated on first use (written aside, then renamed into place)."""
    root = Path(root) if root is not None else cache_dir() / f"procedural-v{PROCEDURAL_VERSION}-seed{seed}"
    if (root / MANIFEST).is_file():
        return root
    if root.exists() and any(root.iterdir()):
        raise InputError(f"videos: {root} exists but holds no {MANIFEST}; remove it to regenerate")
    try:
        with staged_folder(root) as tmp:
            write_procedural(tmp, seed=seed)
    except OSError:
        if not (root / MANIFEST).is_file():  # not a concurrent writer winning the race
            raise
    return root


# --------------------------------------------------------------------------- DAVIS folders


def _has_jpegs(folder: Path) -> bool:
    return folder.is_dir() and any(p.suffix.lower() in (".jpg", ".jpeg") for p in folder.iterdir())


def davis_frames_root(path: str | os.PathLike, field: str = "davis") -> Path:
    """The folder holding ``<video>/*.jpg`` inside a DAVIS path (the path itself or its ``JPEGImages/480p``)."""
    given = Path(path).expanduser()
    if not given.exists():
        raise InputError(f"{field}: {given} does not exist")
    if not given.is_dir():
        raise InputError(f"{field}: {given} is not a folder")
    for candidate in (given, given / "JPEGImages" / "480p", given / "DAVIS" / "JPEGImages" / "480p"):
        if candidate.is_dir() and any(_has_jpegs(sub) for sub in candidate.iterdir()):
            return candidate
    raise InputError(
        f"{field}: no <video>/*.jpg folders under {given} (expected the layout JPEGImages/480p/<video>/00000.jpg)"
    )


def check_videos(root: Path, names: Sequence[str], field: str = "davis") -> list[Path]:
    """Folders of ``names`` under ``root``; each must exist and hold JPEG frames."""
    if not names:
        raise InputError(f"{field}: no videos requested")
    folders = []
    for name in names:
        folder = root / name
        if not folder.is_dir():
            raise InputError(f"{field}: video {name!r} not found in {root} (expected {folder}/00000.jpg)")
        if not _has_jpegs(folder):
            raise InputError(f"{field}: video {name!r} in {root} holds no .jpg frames")
        folders.append(folder)
    return folders


@dataclass(frozen=True)
class VideoSource:
    """Where background videos come from: ``kind`` is ``'davis'`` or ``'procedural'``."""

    root: Path
    kind: str
    origin: str

    def videos(self, split_or_names: str | Sequence[str]) -> list[Path]:
        """Checked folders of a split (``'train'``/``'eval'``) or of explicit video names."""
        names = split_videos(split_or_names) if isinstance(split_or_names, str) else tuple(split_or_names)
        return check_videos(self.root, names, "davis" if self.kind == "davis" else "videos")

    def describe(self) -> str:
        """One line for logs: which backgrounds a run used."""
        if self.kind == "davis":
            return f"DAVIS-2017 backgrounds from {self.root} ({self.origin})"
        return f"procedural backgrounds from {self.root} ({self.origin}; no DAVIS path given)"


def resolve_videos(davis: str | os.PathLike | None = None, seed: int = 0) -> VideoSource:
    """The background source: ``davis`` (``--davis``), else ``$BISIMKIT_DAVIS``, else procedural videos."""
    if davis is not None and str(davis) != "":
        return VideoSource(davis_frames_root(davis), "davis", "--davis")
    if os.environ.get(DAVIS_ENV):
        return VideoSource(davis_frames_root(os.environ[DAVIS_ENV], DAVIS_ENV), "davis", f"${DAVIS_ENV}")
    return VideoSource(ensure_procedural(seed=seed), "procedural", f"seed {seed}")


# --------------------------------------------------------------------------- DAVIS download


def fetch(
    dest: str | os.PathLike,
    url: str = DAVIS_URL,
    sha256: str | None = None,
    keep_archive: bool = False,
    retries: int = 5,
    progress: bool = True,
    say: Callable[[str], None] = print,
) -> Path:
    """Download, verify and extract DAVIS into ``dest`` (:mod:`agents.davis_download`); returns ``dest/DAVIS``.
    ``sha256``: the archive's checksum (default: the pinned one of the official archive)."""
    expected = check_sha256(sha256) if sha256 else DAVIS_SHA256
    dest = Path(dest).expanduser()
    if dest.exists() and not dest.is_dir():
        raise InputError(f"{dest} is not a folder", param="to")
    dest.mkdir(parents=True, exist_ok=True)
    final = dest / "DAVIS"
    if all(any((final / "JPEGImages" / "480p" / v).glob("*.jpg")) for v in TRAIN_VIDEOS + EVAL_VIDEOS):
        say(f"DAVIS-2017 frames of the {len(TRAIN_VIDEOS) + len(EVAL_VIDEOS)} videos are already in {final}")
        return final
    archive = dest / ARCHIVE
    if not archive.exists():
        part = dest / (ARCHIVE + ".part")
        bar = Progress(
            total=DAVIS_BYTES if url == DAVIS_URL else None, label="DAVIS-2017", unit="bytes", enabled=progress
        )
        try:
            download(url, part, retries=retries, progress=lambda done, total: bar.show(done))
        finally:
            bar.close()
        os.replace(part, archive)
    actual = sha256_of(archive)
    if actual != expected:
        archive.unlink()
        raise DownloadError(
            f"{archive.name} has SHA-256 {actual}, expected {expected}; the archive was removed "
            f"(a different file, or a corrupted transfer)",
            param="sha256",
        )
    extract_videos(archive, dest, TRAIN_VIDEOS + EVAL_VIDEOS)
    if not keep_archive:
        archive.unlink()
    say(
        f"DAVIS-2017: the frames of {len(TRAIN_VIDEOS)} training and {len(EVAL_VIDEOS)} held-out videos are in "
        f"{final / 'JPEGImages' / '480p'} (SHA-256 {actual[:12]}... verified)"
    )
    say(f"train on them with --davis {final} (or export {DAVIS_ENV}={final})")
    return final


# --------------------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agents.videos fetch --to DIR [--url URL --sha256 HEX] [--keep-archive]``; exit 0, or 2."""
    parser = argparse.ArgumentParser(
        prog="python -m agents.videos", description="Background videos for the distracting backgrounds."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser(
        "fetch",
        help="download DAVIS-2017 trainval 480p and extract the 32 videos a run uses",
        description="Download the DAVIS-2017 trainval 480p archive (resuming an interrupted "
        "transfer), check its SHA-256, extract the frames of the 2 training and 30 "
        "held-out videos into DIR/DAVIS and say how to train on them.",
    )
    cmd.add_argument("--to", required=True, metavar="DIR", help="folder to put DAVIS/ in")
    cmd.add_argument("--url", default=DAVIS_URL, help="the archive's URL (a mirror; default: the official one)")
    cmd.add_argument(
        "--sha256",
        default=None,
        metavar="HEX",
        help=f"the archive's SHA-256 (default: the official archive's, {DAVIS_SHA256[:12]}...)",
    )
    cmd.add_argument("--keep-archive", action="store_true", help="keep the zip after extracting")
    cmd.add_argument("--retries", type=int, default=5, help="resumes of a broken transfer per call (default 5)")
    cmd.add_argument("--quiet", action="store_true", help="no progress line")
    args = parser.parse_args(argv)
    try:
        if args.retries < 0:
            raise InputError(f"{args.retries} is not a non-negative integer", param="retries")
        fetch(
            args.to,
            url=args.url,
            sha256=args.sha256,
            keep_archive=args.keep_archive,
            retries=args.retries,
            progress=not args.quiet,
        )
    except InputError as exc:
        print(f"error: {exc.for_option({'--to', '--url', '--sha256', '--retries'})}".splitlines()[0], file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: to: {exc}".splitlines()[0], file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
