"""The background frames of the distractions: a frame that cannot be decoded is one line naming it."""

import pytest

from bisimkit.errors import InputError


def test_a_corrupt_video_frame_is_one_line_naming_it(tmp_path):
    from agents.background import load_frames

    video = tmp_path / "bear"
    video.mkdir()
    (video / "00000.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    with pytest.raises(InputError, match=r"^videos: cannot decode .*bear/00000\.jpg"):
        load_frames(str(video), 16)


def test_frames_are_resized_rgb_rows(tmp_path):
    import cv2
    import numpy as np

    from agents.background import load_frames

    video = tmp_path / "clip"
    video.mkdir()
    blue = np.zeros((8, 12, 3), np.uint8)
    blue[..., 0] = 255  # OpenCV writes BGR: pure blue
    cv2.imwrite(str(video / "00001.jpg"), blue)
    cv2.imwrite(str(video / "00000.jpg"), np.full((8, 12, 3), 128, np.uint8))
    frames = load_frames(str(video), 4)
    assert frames.shape == (2, 4 * 4 * 3) and not frames.flags.writeable
    rgb = frames[1].reshape(4, 4, 3)
    assert rgb[..., 2].min() > 200 and rgb[..., 0].max() < 50  # blue is the last channel in RGB
    assert abs(int(frames[0].mean()) - 128) <= 2
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"^videos: no \.jpg frames in "):
        load_frames(str(tmp_path / "empty"), 4)


def test_the_floor_is_as_transparent_as_distracting_control_makes_it():
    from agents.background import ground_plane_alpha

    alphas = {domain: ground_plane_alpha(domain) for domain in ("walker", "cheetah", "cartpole")}
    assert all(0.0 <= a <= 1.0 for a in alphas.values()) and len(set(alphas.values())) > 1
