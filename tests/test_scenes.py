"""agents.scenes: the frames and images the scene check trains on, against their per-pixel formulas.

The scenes draw a batch at once, channels first and in place (``Distractors.compose``, ``discs``); the
references here compute every pixel of every image on its own, in the layout the renderers return, with the
same random draws in the same order. The frames must be equal bit for bit, so a seed gives the same frames
whichever way they are computed.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from agents.scenes import (
    BACKGROUND_MAX,
    DISTRACTORS,
    GAIN_SPAN,
    HELD_OUT_COLOUR,
    HELD_OUT_GAIN_OFFSET,
    HELD_OUT_STRIPES,
    NOISY_SPRITE_NOISE,
    SPRITE_COLOUR,
    SPRITE_LATTICE,
    Distractors,
    HeldOutDistractors,
    build_scene,
    channels_first,
    disc,
    discs,
    finite_scene,
    make_distractors,
    plus_masks,
    ring_mdp,
)
from bisimkit.errors import InputError

KIND_SETS = [()] + [c for r in (1, 2, 3) for c in itertools.combinations(DISTRACTORS, r)]


def reference_frames(kinds, rng: np.random.Generator, images: np.ndarray, alpha: np.ndarray, state) -> np.ndarray:
    """Frames (B, 3, H, W) of ``images`` (B, H, W, 3) and ``alpha`` (B, H, W, 1), every pixel on its own:
    ``back + (image - back) * alpha`` over the whole frame, times the gains, rounded; the background drawn
    from ``rng`` as the distractors draw it (coarse colours, then pixel noise)."""
    rows, (h, w) = images.shape[0], images.shape[1:3]
    back = np.zeros((rows, h, w, 3), np.float32)
    if "background" in kinds:
        coarse = 150 * rng.random((rows, 4, 4, 3), np.float32)
        ys, xs = np.linspace(0, 3, h, dtype=np.float32), np.linspace(0, 3, w, dtype=np.float32)
        wy = np.maximum(0, 1 - np.abs(ys[:, None] - np.arange(4)[None, :]))
        wx = np.maximum(0, 1 - np.abs(xs[:, None] - np.arange(4)[None, :]))
        back = np.einsum("hi,bijc,wj->bhwc", wy, coarse, wx, optimize=True)
        back = back + 30 * rng.random((rows, h, w, 3), np.float32)
    if "sprite" in kinds:
        side = max(3, int(round(0.3 * min(h, w))))
        thick = max(1, side // 5)
        mask = np.zeros((rows, h, w, 1), np.float32)
        for b, (cy, cx) in enumerate(state.cell):
            y = int(round(cy * (h - side) / (SPRITE_LATTICE - 1)))
            x = int(round(cx * (w - side) / (SPRITE_LATTICE - 1)))
            mask[b, y : y + side, x : x + side] = 1.0
            mask[b, y + thick : y + side - thick, x + thick : x + side - thick] = 0.0
        back = back + (np.array([230.0, 40.0, 40.0], np.float32) - back) * mask
    out = back + (images - back) * alpha
    if "colour" in kinds:
        out *= state.gains[:, None, None, :].astype(np.float32)
    out += 0.5
    np.clip(out, 0, 255, out=out)
    return np.ascontiguousarray(out.astype(np.uint8).transpose(0, 3, 1, 2))


def reference_disc(size: int, centre, radius: float, colour=(255, 230, 40)) -> np.ndarray:
    """One disc, every pixel's cover computed over the whole frame, on the built-in canvas."""
    img = np.zeros((size, size, 4), np.uint8)
    edge = max(1, size // 16)
    for sl in (np.s_[:edge], np.s_[-edge:], np.s_[:, :edge], np.s_[:, -edge:]):
        img[sl] = (255, 0, 255, 255)
    yy, xx = np.mgrid[0:size, 0:size] + 0.5
    cover = np.clip(radius + 0.5 - np.hypot(yy - centre[0], xx - centre[1]), 0.0, 1.0)
    img[cover > 0, :3] = np.asarray(colour, np.uint8)
    img[..., 3] = np.maximum(img[..., 3], (cover * 255).round().astype(np.uint8))
    return img


@pytest.mark.parametrize("kinds", KIND_SETS, ids=lambda k: "+".join(k) or "none")
def test_frames_are_the_per_pixel_formula_with_the_same_draws(kinds):
    rng = np.random.default_rng(4)
    for rows, (h, w), channels in ((5, (16, 16), 4), (1, (20, 17), 3), (9, (33, 33), 4), (5, (16, 16), 3)):
        images = rng.integers(0, 256, (rows, h, w, channels)).astype(np.uint8)
        images[:, ::3, ::2] = 0  # transparent pixels, black ones among them
        state = Distractors(kinds, h, np.random.default_rng(1)).initial(rows)
        dist = Distractors(kinds, h, np.random.default_rng([7, rows]))
        draws = np.random.default_rng([7, rows])
        rgb, alpha = channels_first(images)
        for _ in range(2):  # a second batch of the same size reuses the first one's work arrays
            got = dist.compose(rgb, alpha, state)
            expected = reference_frames(kinds, draws, rgb.transpose(0, 2, 3, 1), alpha.transpose(0, 2, 3, 1), state)
            assert got.dtype == np.uint8 and got.flags.c_contiguous
            np.testing.assert_array_equal(got, expected)


def test_a_frame_is_not_changed_by_the_next_batch():
    scene = build_scene("ring", 16)
    dist = Distractors("all", 16, np.random.default_rng(0))
    first = scene.frames(np.arange(8), dist, dist.initial(8))
    kept = first.copy()
    scene.frames(np.arange(8), dist, dist.initial(8))
    np.testing.assert_array_equal(first, kept)


def test_channels_first_splits_alpha_as_the_renderers_define_it():
    rng = np.random.default_rng(0)
    rgba = rng.integers(0, 256, (3, 16, 18, 4)).astype(np.uint8)
    rgb, alpha = channels_first(rgba)
    assert rgb.shape == (3, 3, 16, 18) and alpha.shape == (3, 1, 16, 18)
    np.testing.assert_array_equal(rgb, rgba[..., :3].transpose(0, 3, 1, 2).astype(np.float32))
    np.testing.assert_array_equal(alpha[:, 0], rgba[..., 3].astype(np.float32) / 255.0)
    plain = rgba[..., :3].copy()
    plain[:, :4] = 0
    _, alpha = channels_first(plain)
    np.testing.assert_array_equal(alpha[:, 0], (plain.max(axis=-1) > 0).astype(np.float32))
    assert np.all(alpha[:, 0, :4] == 0)


def test_discs_are_the_per_pixel_cover():
    rng = np.random.default_rng(3)
    for size, radius in ((16, 1.9), (32, 3.84), (84, 10.08), (20, 0.3)):
        centres = np.concatenate(
            [
                rng.uniform(-4, size + 4, (40, 2)),  # some cut by the frame's edges
                [[-1e3, 5.0], [5.0, 1e4], [size / 2, size / 2], [0.0, 0.0], [size, size]],
            ]
        )
        batch = discs(size, centres, radius)
        for centre, image in zip(centres, batch):
            np.testing.assert_array_equal(image, reference_disc(size, centre, radius))
        np.testing.assert_array_equal(disc(size, tuple(centres[0]), radius), batch[0])


def test_the_sprite_scene_draws_a_batch_as_it_draws_each_state():
    scene = build_scene("sprite", 24)
    states = np.random.default_rng(0).normal(0.0, 1.0, (30, 2))
    rgb, alpha = scene.layers(states)
    one_by_one = channels_first(np.stack([scene.render(s) for s in states]))
    np.testing.assert_array_equal(rgb, one_by_one[0])
    np.testing.assert_array_equal(alpha, one_by_one[1])


def test_a_finite_scene_draws_each_state_once():
    mdp, mean, std = ring_mdp()
    calls = []

    def render(s: int) -> np.ndarray:
        calls.append(s)
        return reference_disc(16, (8.0, 2.0 + s), 2.0)

    scene = finite_scene(mdp, render, mean, std)
    calls.clear()
    states = np.array([3, 3, 0, 7, 1])
    rgb, alpha = scene.layers(states)
    scene.layers(states[::-1])
    assert sorted(calls) == list(range(mdp.n_states))
    np.testing.assert_array_equal(rgb[0], rgb[1])
    one = channels_first(render(7)[None])
    np.testing.assert_array_equal(rgb[3], one[0][0])
    np.testing.assert_array_equal(alpha[3], one[1][0])


# ------------------------------------------------------------------ the held-out distractor family
def _outline_masks(size: int) -> np.ndarray:
    """The training sprite's outline at every lattice cell, (25, H, W) bool."""
    dist = Distractors(["sprite"], size, np.random.default_rng(0))
    masks = np.zeros((SPRITE_LATTICE**2, size * size), bool)
    for k, pixels in enumerate(dist._outlines((size, size))):
        masks[k, pixels] = True
    return masks.reshape(-1, size, size)


@pytest.mark.parametrize("size", [16, 32, 84])
def test_the_held_out_family_shares_no_value_with_the_training_family(size):
    """Over many steps of both chains: training gains stay in [0.6, 1.4] and held-out ones outside it; the
    training background stays at or under 180 and the held-out stripes at or over 190 in every channel; the
    held-out plus sign is never one of the training outlines, and its colour is another."""
    rows, steps = 64, 20
    train = Distractors("all", size, np.random.default_rng(1))
    held = HeldOutDistractors("all", size, np.random.default_rng(2))
    t, h = train.initial(rows), held.initial(rows)
    outlines = _outline_masks(size)
    for _ in range(steps):
        t, h = train.step(t), held.step(h)
        assert np.all(np.abs(t.gains - 1) <= GAIN_SPAN + 1e-12)
        assert np.all(np.abs(h.gains - 1) >= HELD_OUT_GAIN_OFFSET[0] - 1e-12)
        assert np.all(np.abs(h.gains - 1) <= HELD_OUT_GAIN_OFFSET[1] + 1e-12)
        assert train._background(rows, (size, size)).max() <= BACKGROUND_MAX
        assert held._background(rows, (size, size)).min() >= HELD_OUT_STRIPES[0]
        plus = plus_masks((size, size), h.cell)
        assert plus.any(axis=(1, 2)).all()
        same = (plus[:, None] == outlines[None]).all(axis=(2, 3))
        assert not same.any()
    assert not np.array_equal(HELD_OUT_COLOUR, SPRITE_COLOUR)


def test_a_held_out_frame_is_its_layers_over_the_held_out_distractors():
    """Without the colour gains, every pixel the state's sprite and the plus sign leave clear shows the stripes
    (190 or more in every channel), and the state's opaque pixels are the state's image; with them, those
    pixels are the image times the held-out gains."""
    scene = build_scene("ring", 32)
    rgb, alpha = scene.layers(np.arange(8))
    opaque = alpha[:, 0] == 1
    for kinds in (("background",), ("background", "sprite"), DISTRACTORS):
        dist = make_distractors(kinds, 32, np.random.default_rng(5), "held-out")
        state = dist.initial(8)
        frames = scene.frames(np.arange(8), dist, state).astype(float)
        gains = state.gains if "colour" in kinds else np.ones((8, 3))
        expected = np.clip(rgb * gains[:, :, None, None] + 0.5, 0, 255)
        np.testing.assert_allclose(
            frames.transpose(0, 2, 3, 1)[opaque], expected.transpose(0, 2, 3, 1)[opaque], atol=1.0
        )
        if "colour" not in kinds:
            clear = alpha[:, 0] == 0
            if "sprite" in kinds:
                clear &= ~plus_masks((32, 32), state.cell)
            assert clear.any() and np.all(frames.transpose(0, 2, 3, 1)[clear] >= HELD_OUT_STRIPES[0])


def test_the_family_is_checked():
    with pytest.raises(InputError, match=r"family: 'unseen' is not one of training, held-out"):
        make_distractors("all", 16, np.random.default_rng(0), "unseen")


# ------------------------------------------------------------------ the noisy sprite
def test_the_noisy_sprite_is_the_sprite_with_four_times_the_transition_noise():
    sprite, noisy = build_scene("sprite", 16), build_scene("sprite-noisy", 16)
    z = np.random.default_rng(0).uniform(-0.7, 0.7, (5, 2))
    a = np.tanh(z)
    np.testing.assert_allclose(noisy.mdp.transition_std(z, a), 4 * sprite.mdp.transition_std(z, a))
    np.testing.assert_array_equal(noisy.mdp.transition_mean(z, a), sprite.mdp.transition_mean(z, a))
    np.testing.assert_array_equal(noisy.mdp.reward(z, a), sprite.mdp.reward(z, a))
    np.testing.assert_array_equal(noisy.eval_states, sprite.eval_states)
    assert noisy.name == "sprite-noisy" and noisy.mdp.transition_std(z, a)[0, 0] == NOISY_SPRITE_NOISE
