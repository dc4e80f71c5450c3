"""agents.scenes and agents.metric_check: scenes with exact ground truth, the learned metric, bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from agents.metric_check import exact_metric, learn_metric, load_results, measure, summarise, write_results  # noqa: E402
from agents.scenes import (  # noqa: E402
    Distractors,
    build_scene,
    discrete_actions,
    finite_scene,
    interval_probabilities,
    ring_mdp,
    squash_sigma,
)
from bisimkit import entangled_coupling  # noqa: E402
from bisimkit.errors import InputError  # noqa: E402
from bisimkit.gaussian import load_gaussian  # noqa: E402
from bisimkit.mdp import FiniteMDP, load_mdp  # noqa: E402
from bisimkit.solvers import solve  # noqa: E402


# ------------------------------------------------------------- the scenes' mathematics
@pytest.mark.parametrize("mean", [-1.3, -0.4, -0.05, 0.0, 0.1, 0.6, 1.5])
def test_squash_sigma_makes_the_finite_mean_action_the_squashed_mean(mean):
    sd = squash_sigma(mean)
    p = interval_probabilities(np.array([mean]), np.array([sd]), 3)[0]
    assert p @ np.array([-1.0, 0.0, 1.0]) == pytest.approx(np.tanh(mean), abs=1e-10)


def test_interval_probabilities_are_the_squashed_gaussians_laws():
    rng = np.random.default_rng(0)
    mean, std = np.array([0.3, -1.0]), np.array([0.7, 1.4])
    u = mean[:, None] + std[:, None] * rng.standard_normal((2, 200_000))
    for s in range(2):
        freq = np.bincount(discrete_actions(np.tanh(u[s]), 3), minlength=3) / u.shape[1]
        np.testing.assert_allclose(freq, interval_probabilities(mean, std, 3)[s], atol=4e-3)


def test_shared_action_noise_draws_the_north_west_corner_coupling():
    """Two states acting with one shared xi pick discrete actions with the entangled (comonotone) coupling
    of the finite operator; independent noise would give the product coupling."""
    rng = np.random.default_rng(1)
    mean, std = np.array([0.8, -0.3]), np.array([0.5, 1.2])
    xi = rng.standard_normal(400_000)
    k = [discrete_actions(np.tanh(mean[s] + std[s] * xi), 3) for s in range(2)]
    joint = np.zeros((3, 3))
    np.add.at(joint, (k[0], k[1]), 1.0 / len(xi))
    p = interval_probabilities(mean, std, 3)
    np.testing.assert_allclose(joint, entangled_coupling(p[0], p[1]), atol=4e-3)
    product = np.outer(p[0], p[1])
    assert np.abs(joint - product).max() > 0.05


def test_distractors_never_touch_the_dynamics():
    """The same transition stream with every distractor or none: the same states, actions and rewards;
    the pixels differ."""
    scene = build_scene("ring", 16)
    outcomes, pixels = [], []
    for kinds in ("all", "none"):
        rng = np.random.default_rng(3)
        dist = Distractors(kinds, 16, np.random.default_rng(9))
        s = scene.sample_states(32, rng)
        mu, sd = scene.behaviour(s)
        nxt, r, a = scene.step(s, mu + sd * rng.standard_normal(mu.shape), rng)
        outcomes.append((s, nxt, r, a))
        pixels.append(scene.frames(s, dist, dist.initial(32)))
    for x, y in zip(*outcomes):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(*pixels)


def test_each_distractor_changes_the_pixels_of_one_state():
    scene = build_scene("ring", 16)
    for kind in ("background", "colour", "sprite"):
        dist = Distractors([kind], 16, np.random.default_rng(0))
        frames = scene.frames(np.zeros(6, int), dist, dist.initial(6))
        assert len({f.tobytes() for f in frames}) > 1, kind


def test_exact_targets_are_bisimkits_fixed_points_of_the_saved_mdp(tmp_path):
    scene = build_scene("ring", 16)
    mdp_path = tmp_path / "mdp.json"
    from bisimkit.mdp import save_mdp

    save_mdp(scene.mdp, mdp_path)
    mdp = load_mdp(mdp_path)
    for method, (metric, ground) in {"eps-pi": ("eps-bar", "policy"), "drq+pse": ("psm-sampled", None)}.items():
        exact, info = exact_metric(scene, method)
        sol = solve(mdp, metric, ground=ground) if ground else solve(mdp, metric)
        np.testing.assert_allclose(exact, sol.distances, atol=1e-8)
        assert info["target_exact"]


def test_l1_head_floor():
    """0 for an L1-embeddable matrix (the ring's metrics, a path), 10% for the K_{2,3} graph metric, which
    violates the pentagonal inequality that every L1 metric satisfies."""
    from agents.metric_check import l1_head_floor

    x = np.array([0.0, 1.0, 3.0, 4.5])
    assert l1_head_floor(np.abs(x[:, None] - x[None, :])) == pytest.approx(0.0, abs=1e-9)
    ring = build_scene("ring", 16)
    assert l1_head_floor(exact_metric(ring, "eps-r")[0]) == pytest.approx(0.0, abs=1e-9)
    k23 = np.array([[0, 2, 1, 1, 1], [2, 0, 1, 1, 1], [1, 1, 0, 2, 2], [1, 1, 2, 0, 2], [1, 1, 2, 2, 0]], float)
    assert l1_head_floor(k23) == pytest.approx(0.1, abs=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_the_entangled_metric_is_always_within_an_l1_heads_reach(seed):
    """Under the shared-noise coupling d_eps-bar(s, t) = E_u[sum_k c^k |g(chain_s(u), k) - g(chain_t(u), k)|],
    an L1 distance between functions of the noise, so it lies in the cut cone for every finite MDP, stochastic
    ones included (docs/results/metric_check.md, "Which exact metrics a latent head can represent"); psm-sampled's
    self-distances keep it out of reach of any head that is 0 on identical latents."""
    from agents.metric_check import l1_head_floor
    from bisimkit.generators import random_mdp

    mdp = random_mdp(7, 3, seed=seed, action_dim=1)
    for ground in ("reward", "policy"):
        assert l1_head_floor(solve(mdp, "eps-bar", ground=ground, tol=1e-11).distances) == pytest.approx(0, abs=1e-9)
    U = solve(mdp, "psm-sampled", tol=1e-11).distances
    assert np.min(np.diag(U)) > 0.05 * np.max(U)


def test_k23_breaks_the_pentagonal_inequality():
    """Hand-computed: b = (-1, -1, 1, 1, 1) sums to 1, and sum_{i<j} b_i b_j d_ij = 2 (one pair inside {0, 1}) + 6
    (three pairs inside {2, 3, 4}) - 6 (six pairs across) = 2 > 0, which no L1 metric allows."""
    k23 = np.array([[0, 2, 1, 1, 1], [2, 0, 1, 1, 1], [1, 1, 0, 2, 2], [1, 1, 2, 0, 2], [1, 1, 2, 2, 0]], float)
    b = np.array([-1, -1, 1, 1, 1])
    i, j = np.triu_indices(5, 1)
    assert float(np.sum(b[i] * b[j] * k23[i, j])) == 2.0


def test_summary_numbers():
    exact = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 4.0], [2.0, 4.0, 0.0]])
    learned = exact.copy()
    learned[0, 2] = learned[2, 0] = 2.4
    s = summarise(learned, exact, 0.01)
    assert s["max_relative_error"] == pytest.approx(0.1)
    assert s["mean_relative_error"] == pytest.approx(0.4 / 3 / 4)
    assert s["spearman"] == pytest.approx(1.0)


# ------------------------------------------------------------- learning (quick variant)
def test_quick_isolated_run_writes_what_rechecks_it(tmp_path):
    """A few updates of the eps-r agent on the ring: the files reproduce the summary, the MDP file gives the
    exact matrix back, and the same measurement runs on the trained agent."""
    check = learn_metric(
        "ring", method="eps-r", steps=6, batch=16, image_size=16, draws=3, config={"model_grad": False, "beta": 0.1}
    )
    write_results(check, tmp_path)
    saved = load_results(tmp_path)
    config = saved["summary"]["config"]
    assert (config["model_grad"], config["beta"], config["spread_units"]) == (False, 0.1, False)
    assert saved["learned"].shape == saved["exact"].shape == (8, 8)
    again = summarise(saved["learned"], saved["exact"], saved["summary"]["distractor_invariance"])
    for key in ("mean_relative_error", "max_relative_error", "spearman"):
        assert saved["summary"][key] == pytest.approx(again[key])
    sol = solve(load_mdp(tmp_path / "mdp.json"), "eps-bar", ground="reward")
    np.testing.assert_allclose(saved["exact"], sol.distances, atol=1e-8)
    learned, invariance = measure(check.agent, check.scene, "all", 3, 0)
    np.testing.assert_allclose(learned, check.learned, rtol=1e-6)
    assert np.all(np.isfinite(learned)) and invariance >= 0


def test_figure_cli_bad_input_is_one_line_exit_2(tmp_path, capsys):
    from figures.metric_check import main as figure_main

    assert figure_main([str(tmp_path / "none"), "--out", str(tmp_path / "f.png")]) == 2
    assert "runs: " in capsys.readouterr().err and not (tmp_path / "f.png").exists()
    (tmp_path / "file").write_text("x")
    assert figure_main([str(tmp_path), "--out", str(tmp_path / "file" / "f.png")]) == 2
    assert capsys.readouterr().err.startswith("error: out: cannot write")


def test_quick_agent_mode_and_gaussian_scene(tmp_path):
    check = learn_metric(
        "sprite",
        method="eps-pi",
        steps=3,
        batch=8,
        image_size=16,
        draws=2,
        samples=50,
        mode="agent",
        config={"seed_steps": 8},
    )
    assert check.learned.shape == (25, 25)
    write_results(check, tmp_path)
    model = load_gaussian(tmp_path / "mdp-gaussian.json")
    assert model.squash and np.allclose(np.load(tmp_path / "states.npy"), check.scene.eval_states)


# ------------------------------------------------------------- bad input
def _render_ok(s):
    img = np.zeros((16, 16, 3), np.uint8)
    img[4 + s, 4 + s] = 255
    return img


def test_user_mdp_and_renderer():
    mdp, mean, std = ring_mdp(4)
    img = lambda s: _render_ok(int(s))  # noqa: E731
    scene = finite_scene(mdp, img, mean, std)
    assert scene.image_shape == (16, 16)
    assert np.allclose(scene.mdp.policy, mdp.policy)


@pytest.mark.parametrize(
    "render, message",
    [
        (lambda s: np.zeros((16 + int(s), 16, 3), np.uint8), "render(state 1): expected shape (16, 16)"),
        (lambda s: np.zeros((16, 16, 3), np.uint8 if s == 0 else np.float32), "render(state 1): expected dtype uint8"),
    ],
)
def test_a_renderer_with_changing_images_is_refused(render, message):
    mdp, mean, std = ring_mdp(4)
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        learn_metric(mdp, render, behaviour=(mean, std), steps=1)


def test_a_stochastic_finite_mdp_is_refused():
    P = np.full((2, 3, 2), 0.5)
    mdp = FiniteMDP(P, np.zeros((2, 3)), 0.9)
    with pytest.raises(InputError, match=r"transitions\[s=0, a=0\]: not deterministic"):
        finite_scene(mdp, _render_ok, [0.0, 0.0], [1.0, 1.0])


def test_a_reward_that_is_not_a_function_of_the_next_state_is_refused():
    mdp, mean, std = ring_mdp(4)
    R = mdp.rewards.copy()
    R[0, 1] += 1.0
    with pytest.raises(InputError, match=r"rewards\[s="):
        finite_scene(FiniteMDP(mdp.transitions, R, 0.9), _render_ok, mean, std)


def _cli(tmp_path, *args):
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "agents.metric_check", "--out", str(out), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc, out


def test_cli_method_without_a_metric_loss_exits_2_nothing_written(tmp_path):
    proc, out = _cli(tmp_path, "--method", "sac")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: method: 'sac' has no metric loss to check (choose from drq+dbc, eps-r, drq+pse, eps-pi)"
    ]
    assert not out.exists()


@pytest.mark.parametrize(
    "args, field",
    [
        (["--method", "drq"], "method: 'drq'"),
        (["--scene", "maze"], "scene: 'maze'"),
        (["--distractors", "smoke"], "distractors[0]: 'smoke'"),
        (["--steps", "0"], "steps: expected an integer >= 1"),
        (["--render", "numpy:not_there"], "render: cannot load 'numpy:not_there'"),
        (["--behaviour", None], "behaviour: a finite --mdp needs --behaviour"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2_nothing_written(tmp_path, capsys, args, field):
    from agents.metric_check.__main__ import main

    if "--render" in args or "--behaviour" in args:
        mdp, mean, std = ring_mdp(4)
        from bisimkit.mdp import save_mdp

        save_mdp(mdp, tmp_path / "m.json")
        (tmp_path / "b.json").write_text(json.dumps({"mean": mean.tolist(), "std": std.tolist()}))
        args = [
            "--mdp",
            str(tmp_path / "m.json"),
            *(["--behaviour", str(tmp_path / "b.json"), *args] if "--render" in args else ["--render", "numpy:zeros"]),
        ]
    out = tmp_path / "out"
    assert main(["--out", str(out), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and field in err[0]
    assert not out.exists()


@pytest.mark.parametrize(
    "warmup, message", [(10, "warmup: 10 updates leave none of the 10 steps"), (-1, "warmup: expected an integer >= 0")]
)
def test_a_warmup_that_leaves_no_bisimulation_steps_is_refused(warmup, message):
    with pytest.raises(InputError, match=message):
        learn_metric("ring", steps=10, warmup=warmup)


# ------------------------------------------------------------- samples per pair, held-out distractors
def test_samples_per_pair_defaults_to_trainings_and_every_summary_states_it():
    from agents.config import TrainConfig

    check = learn_metric("ring", method="eps-pi", steps=3, batch=8, image_size=16, draws=2)
    s = check.summary
    assert s["samples_per_pair"] == TrainConfig().bisim_samples == 1 and s["config"]["bisim_samples"] == 1
    assert check.agent.config.bisim_samples == 1
    four = learn_metric("ring", method="eps-pi", steps=3, batch=8, image_size=16, draws=2, samples_per_pair=4)
    assert four.summary["samples_per_pair"] == 4 and four.agent.config.bisim_samples == 4
    held = s["held_out"]
    assert set(held) == {"mean_relative_error", "max_relative_error", "spearman", "distractor_invariance"}
    assert check.learned_held_out.shape == check.learned.shape and not np.allclose(
        check.learned_held_out, check.learned
    )
    assert s["per_pair_floor"] == 0.05 and 0 < s["per_pair_pairs"] <= s["pairs"]


def test_per_pair_errors_leave_out_the_pairs_under_the_floor():
    exact = np.array([[0.0, 0.01, 2.0], [0.01, 0.0, 4.0], [2.0, 4.0, 0.0]])
    learned = exact.copy()
    learned[0, 1] = learned[1, 0] = 0.03  # 200% off, but under 5% of the largest distance
    learned[0, 2] = learned[2, 0] = 2.5
    s = summarise(learned, exact, 0.0)
    assert s["per_pair_pairs"] == 2 and s["per_pair_max_relative_error"] == pytest.approx(0.25)
    assert s["per_pair_mean_relative_error"] == pytest.approx(0.125)


def test_cli_samples_per_pair_below_one_is_one_line_exit_2(tmp_path, capsys):
    from agents.metric_check.__main__ import main

    out = tmp_path / "out"
    assert main(["--out", str(out), "--samples-per-pair", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: samples_per_pair: expected an integer >= 1, got 0"] and not out.exists()
