"""benchmarks.coupling_study and figures.coupling_study: the options, resuming, the exact references each run is
held against, eps-r's independent-coupling variant, DBC's own update, and the table, findings and figure."""

from __future__ import annotations

import json
import os
import re
import shutil

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from agents.metric_check import (  # noqa: E402
    check_variant,
    exact_metric,
    independent_reward_agent,
    learn_metric,
    learned_distance,
    measure,
)
from agents.metric_check.references import (  # noqa: E402
    Reference,
    compare,
    mean_action_mdp,
    reference_metric,
    reward_bracket,
    separable_monotone,
)
from agents.scenes import NOISY_SPRITE_NOISE, build_scene, interval_probabilities, sprite_model  # noqa: E402
from benchmarks.coupling_study import main, my_share, parse_seeds, parse_slice, plan  # noqa: E402
from bisimkit.errors import InputError  # noqa: E402
from bisimkit.gaussian import LinearGaussianMDP  # noqa: E402
from bisimkit.gaussian.discretize import discretize  # noqa: E402
from bisimkit.gaussian.exact import distance as exact_distance  # noqa: E402
from bisimkit.solvers import solve  # noqa: E402
from bisimkit_runs.aggregate import interval_estimates  # noqa: E402
from figures.coupling_study import (  # noqa: E402
    BEGIN,
    END,
    METHOD_ORDER,
    MODES,
    SCENES,
    SEEDS,
    aggregate,
    coverage,
    findings,
    load_records,
    main as figure_main,  # noqa: E402
)


# ------------------------------------------------------------------ options
def test_seeds_and_slices():
    assert parse_seeds("0-4") == [0, 1, 2, 3, 4]
    assert parse_seeds("3,0,3,5-6") == [0, 3, 5, 6]
    for bad, field in (("a", "seeds[0]"), ("0,4-1", "seeds[1]"), ("-2", "seeds[0]")):
        with pytest.raises(InputError, match=field.replace("[", r"\[").replace("]", r"\]")):
            parse_seeds(bad)
    assert parse_slice("2/3") == (2, 3) and parse_slice(None) == (1, 1)
    for bad in ("0/2", "3/2", "x", "1"):
        with pytest.raises(InputError, match="slice: "):
            parse_slice(bad)


def test_the_figure_knows_the_studys_grid():
    from benchmarks import coupling_study as study
    from figures import coupling_study as figure

    assert tuple(study.STUDY_METHODS) == figure.METHOD_ORDER and study.STUDY_SCENES == figure.SCENES
    assert study.STUDY_MODES == figure.MODES and len(parse_seeds(study.DEFAULTS["seeds"])) == figure.SEEDS


def test_slices_split_the_runs_whole_seeds_first():
    runs = plan(["isolated", "agent"], ["ring", "sprite"], ["eps-r", "dbc", "indep-r"], [0, 1, 2])
    assert len(runs) == 36 and runs[0] == ("isolated", "ring", "eps-r", 0) and {r[3] for r in runs[:12]} == {0}
    shares = [my_share(runs, k, 5) for k in range(1, 6)]
    assert sorted(r for s in shares for r in s) == sorted(runs)
    assert sum(len(s) for s in shares) == len(runs)


# ------------------------------------------------------------------ resuming
def _cli(tmp_path, *extra):
    return ["--out", str(tmp_path), "--modes", "isolated", "--scenes", "ring", "--threads", "1", *extra]


def test_a_dry_run_writes_each_record_whole_and_a_second_run_skips_it(tmp_path, capsys):
    args = _cli(tmp_path, "--dry-run", "--methods", "eps-r,indep-r")
    assert main(args) == 0
    folders = [tmp_path / "isolated" / "ring" / m / "seed0" for m in ("eps-r", "indep-r")]
    records = [json.loads((f / "summary.json").read_text()) for f in folders]
    assert [r["own"]["name"] for r in records] == ["eps-bar-reward", "independent-reward"]
    assert {r["intended"]["name"] for r in records} == {"pi"}
    assert all(r["samples_per_pair"] == 1 and r["check"]["config"]["bisim_samples"] == 1 for r in records)
    assert records[1]["coupling"] == "independent" and records[0]["coupling"] == "entangled"
    for f in folders:
        assert {p.name for p in f.iterdir()} >= {
            "learned.npy",
            "learned_held_out.npy",
            "intended_lower.npy",
            "intended_upper.npy",
            "own.npy",
            "states.npy",
            "summary.json",
        }
    stamps = [os.stat(f / "summary.json").st_mtime_ns for f in folders]
    (tmp_path / "isolated" / "ring" / "eps-r" / ".seed1.x").mkdir()  # a killed run's staging folder
    capsys.readouterr()
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "2 done, 0 to run" in out
    assert [os.stat(f / "summary.json").st_mtime_ns for f in folders] == stamps
    assert len(load_records(tmp_path)) == 2
    assert (tmp_path / "table.md").is_file() and (tmp_path / "coupling_study.png").is_file()


def test_a_run_recorded_by_another_process_meanwhile_is_skipped(tmp_path, capsys, monkeypatch):
    import benchmarks.coupling_study as study

    real = study.one_run
    calls = []

    def one_run_then_another_process_records_the_next(out, mode, scene, method, seed, args, extra):
        calls.append(method)
        record = real(out, mode, scene, method, seed, args, extra)
        other = study.run_folder(out, mode, scene, "indep-r", seed)
        shutil.copytree(study.run_folder(out, mode, scene, method, seed), other)
        return record

    monkeypatch.setattr(study, "one_run", one_run_then_another_process_records_the_next)
    assert main(_cli(tmp_path, "--dry-run", "--methods", "eps-r,indep-r")) == 0
    out = capsys.readouterr().out
    assert calls == ["eps-r"]
    assert "0 done, 2 to run" in out and "indep-r seed 0: recorded meanwhile by another process; skipped" in out


def test_a_record_of_other_settings_stops_the_command_in_one_line(tmp_path, capsys):
    assert main(_cli(tmp_path, "--dry-run", "--methods", "eps-r")) == 0
    capsys.readouterr()
    assert main(_cli(tmp_path, "--methods", "eps-r", "--seeds", "0")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "summary.json was run with steps 6, this command asks 1500" in err[0]


@pytest.mark.parametrize(
    "args, field",
    [
        (["--methods", "eps-q"], "methods[0]: 'eps-q'"),
        (["--scenes", "maze"], "scenes[0]: 'maze'"),
        (["--samples-per-pair", "0"], "samples_per_pair: expected an integer"),
        (["--slice", "3/2"], "slice: '3/2'"),
    ],
)
def test_bad_options_are_one_line_exit_2_nothing_written(tmp_path, capsys, args, field):
    out = tmp_path / "out"
    assert main(["--out", str(out), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and field in err[0]
    assert not out.exists()


# ------------------------------------------------------------------ references
def test_the_independent_reward_fixed_point_is_dbc_sampled_on_a_deterministic_scene():
    """U = G + c (P_pi x P_pi) U with G(s, t) = sum_ab pi(a|s) pi(b|t) |R(s,a) - R(t,b)|, solved as one linear
    system, against the reference (bisimkit's dbc-sampled)."""
    scene = build_scene("ring", 16)
    mdp = scene.mdp
    pi, R, c = mdp.policy, mdp.rewards, mdp.discount
    G = np.einsum("sa,tb,satb->st", pi, pi, np.abs(R[:, :, None, None] - R[None, None, :, :]))
    P = np.einsum("sa,sax->sx", pi, mdp.transitions)
    n = mdp.n_states
    U = np.linalg.solve(np.eye(n * n) - c * np.kron(P, P), G.reshape(-1)).reshape(n, n)
    ref = reference_metric(scene, "independent-reward")
    np.testing.assert_allclose(ref.upper, U, atol=1e-8)
    assert np.min(np.diag(U)) > 0  # self-distances: the independent coupling's mark


def test_psm_reads_the_squashed_mean_through_an_mdp_of_the_same_policy_averages():
    scene = build_scene("ring", 16)
    behaviour = scene.mdp
    np.testing.assert_allclose(reference_metric(scene, "psm").upper, solve(behaviour, "psm").distances, atol=1e-8)
    mean, std = np.linspace(-1.0, 1.2, 8), np.full(8, 0.3)  # a policy whose interval mean is not tanh(mean)
    mdp = behaviour.with_policy(interval_probabilities(mean, std, 3))
    assert np.max(np.abs(mdp.mean_action[:, 0] - np.tanh(mean))) > 0.05
    same = mean_action_mdp(mdp, np.tanh(mean))
    np.testing.assert_allclose(same.mean_action[:, 0], np.tanh(mean), atol=1e-12)
    np.testing.assert_allclose(solve(same, "pi").distances, solve(mdp, "pi").distances, atol=1e-8)
    assert np.abs(solve(same, "psm").distances - solve(mdp, "psm").distances).max() > 1e-3
    np.testing.assert_allclose(
        reference_metric(scene, "psm", policy=(mean, std)).upper, solve(same, "psm").distances, atol=1e-8
    )


@pytest.mark.parametrize("dim, cells, nodes", [(1, 41, 5), (2, 5, 3)])
def test_psm_equals_eps_bar_on_a_discretised_separable_monotone_sprite(dim, cells, nodes):
    """The module doc's argument, on a finite discretisation of the noisy sprite's model (1-D: one of its
    coordinates; its W1 solved exactly): the shared-noise coupling is the optimal one for the policy ground
    tanh(K s)."""
    full = sprite_model(noise=NOISY_SPRITE_NOISE)
    keep = np.arange(dim)
    model = LinearGaussianMDP(
        full.A[np.ix_(keep, keep)],
        full.B[np.ix_(keep, keep)],
        full.K[np.ix_(keep, keep)],
        [0.5] * dim,
        [NOISY_SPRITE_NOISE] * dim,
        {"state": [3.2, -1.6][:dim], "action": [1.2, -0.6][:dim]},
        0.9,
        squash=True,
        action_scale=1.0,
    )
    assert separable_monotone(full) and separable_monotone(model)
    eye = np.eye(dim)
    grid = discretize(model, [[-1.5, 1.5]] * dim, cells, nodes=nodes)
    h = np.tanh(grid.centers @ (-0.8 * eye).T)
    m = grid.mdp.n_actions
    ground = np.kron(np.abs(h[:, None, :] - h[None, :, :]).sum(-1), np.ones((m, m)))
    eps = solve(grid.mdp, "eps-bar", ground=ground).distances
    psm = solve(mean_action_mdp(grid.mdp, h), "psm").distances
    np.testing.assert_allclose(psm, eps, atol=1e-9 * eps.max())
    assert solve(grid.mdp, "pi").distances.max() > 0


def test_the_pi_bracket_holds_the_exact_pi_of_an_unsquashed_linear_model():
    """Unsquashed, with a linear reward, d_pi is an exact series (bisimkit.gaussian.exact); the bracket's ends
    hold it, and its upper end is that series where entangled pairs move deterministically."""
    model = LinearGaussianMDP(
        np.array([[0.8, 0.1], [0.0, 0.7]]),
        0.3 * np.eye(2),
        -0.5 * np.eye(2),
        [0.5, 0.5],
        [0.2, 0.2],
        {"state": [1.0, -2.0], "action": [0.5, 0.3]},
        0.9,
    )
    states = np.random.default_rng(0).uniform(-0.6, 0.6, (5, 2))
    low, high, info = reward_bracket(model, states, samples=20, seed=1, tail=1e-9)
    i, j = np.triu_indices(5, 1)
    exact = exact_distance(model, "pi", "reward", states[i], states[j]).values
    assert np.all(low[i, j] <= exact + 1e-8) and np.all(exact <= high[i, j] + 1e-8)
    np.testing.assert_allclose(high[i, j], exact, rtol=1e-8)
    assert info["pairs"] == 10 and 0 <= info["exact_pairs"] <= 10


def test_the_noisy_sprites_next_state_noise_matters_most_to_the_independent_fixed_points():
    """From the same draws: the entangled metrics of the two sprites differ (the squashed policy acts on the
    states the shared noise moved) by a few percent; the independent fixed points' self-distances grow by far
    more; the pi bracket is ordered and exact on most pairs."""
    sprite, noisy = build_scene("sprite", 16), build_scene("sprite-noisy", 16)
    a, b = (reference_metric(s, "eps-bar-reward", samples=60, seed=3).upper for s in (sprite, noisy))
    i, j = np.triu_indices(25, 1)
    change = np.abs(a[i, j] - b[i, j]).max() / a.max()
    assert 1e-3 < change < 0.2
    a, b = (reference_metric(s, "independent-reward", samples=60, seed=3).upper for s in (sprite, noisy))
    assert np.diag(b).mean() > 1.2 * np.diag(a).mean()
    pi = reference_metric(noisy, "pi", samples=60, seed=3)
    assert np.all(pi.lower <= pi.upper) and pi.info["pairs"] == 300 and pi.info["exact_pairs"] > 150
    np.testing.assert_allclose(
        pi.upper, reference_metric(noisy, "eps-bar-reward", samples=60, seed=3).upper, rtol=1e-12
    )


def test_compare_with_a_bracket():
    lower = np.array([[0, 1, 2], [1, 0, 3], [2, 3, 0]], float)
    upper = lower.copy()
    upper[0, 2] = upper[2, 0] = 2.5  # one pair known only to lie in [2, 2.5]
    learned = np.array([[0, 1.3, 2.2], [1.3, 0, 3], [2.2, 3, 0]])
    e = compare(learned, Reference("x", lower, upper), floor=0.3)
    assert e["exact_pairs"] == 2 and e["pairs"] == 3 and e["exact_max"] == 3.0
    assert e["max_relative_error"] == pytest.approx(0.1)  # 0.3 / 3 on the first pair; the bracketed one is inside
    assert e["mean_relative_error"] == pytest.approx(0.1 / 3)
    assert e["max_relative_error_upper"] == pytest.approx(0.1) and e["mean_relative_error_upper"] == pytest.approx(
        (0.3 + 0.3 + 0) / 9
    )
    assert e["per_pair_max_relative_error"] == pytest.approx(0.3) and e["per_pair_pairs"] == 2


def test_each_variant_is_checked_in_one_line():
    assert check_variant("eps-r", "independent") == ("independent", "joint")
    assert check_variant("drq+dbc", None, "dbc") == ("independent", "dbc")
    assert check_variant("drq+pse", "independent") == ("independent", "joint")  # its own coupling, named
    for args, message in (
        (("drq+pse", "entangled"), "coupling: 'entangled' with drq+pse"),
        (("eps-pi", "independent"), "eps-pi's independent variant is drq+pse"),
        (("eps-r", None, "dbc"), "update_rule: dbc is DBC's update of drq+dbc"),
        (("drq+dbc", None, "fast"), "update_rule: 'fast'"),
    ):
        with pytest.raises(InputError, match=re.escape(message)):
            check_variant(*args)


# ------------------------------------------------------------------ the variants in the agent
def test_the_independent_variant_is_eps_rs_loss_with_independent_noise():
    from agents.agent import JointAgent
    from agents.config import TrainConfig
    from bisimkit.losses import gaussian_policy, gaussian_transition, reward_ground, sampled_loss

    cfg = TrainConfig(
        method="eps-r",
        image_size=16,
        frame_stack=1,
        capacity="low",
        batch_size=8,
        discount=0.9,
        device="cpu",
        background=False,
        camera=False,
    ).resolved()
    torch.manual_seed(0)
    agent = independent_reward_agent()((3, 16, 16), 1, cfg, torch.device("cpu"))
    z = torch.randn(12, agent.latent_dim)
    torch.manual_seed(1)
    got = agent.bisimulation_loss(z)
    torch.manual_seed(1)
    expected = sampled_loss(
        z,
        distance=agent.distance,
        policy=gaussian_policy(agent.actor, 1, squash=True),
        transition=gaussian_transition(agent.transition, agent.latent_dim),
        ground=reward_ground(agent.next_reward),
        discount=0.9,
        coupling="independent",
    )
    torch.manual_seed(1)
    entangled = JointAgent.bisimulation_term(agent, z, agent.distance)
    assert torch.equal(got, expected) and not torch.allclose(got, entangled)


def test_dbcs_update_runs_isolated_and_is_read_by_its_smooth_l1():
    check = learn_metric(
        "ring", method="drq+dbc", update_rule="dbc", steps=4, batch=8, image_size=16, draws=2, warmup=1
    )
    s = check.summary
    assert s["update_rule"] == "dbc" and s["config"]["augment"] is False and s["config"]["latent_squash"] == "none"
    assert "smooth-L1" in s["learned_distance"] and check.agent.distance is None
    z = torch.randn(5, check.agent.latent_dim)
    d = learned_distance(check.agent)(z[:1].expand(5, -1), z)
    np.testing.assert_allclose(
        d.numpy(),
        torch.nn.functional.smooth_l1_loss(z[:1].expand(5, -1), z, reduction="none").mean(-1).numpy(),
        rtol=1e-6,
    )
    again, _ = measure(check.agent, check.scene, "all", 2, 0)
    np.testing.assert_allclose(again, check.learned, rtol=1e-6)
    assert s["exact"]["reference"] == "dbc-sampled" and not s["exact"]["target_exact"]
    np.testing.assert_allclose(check.exact, exact_metric(check.scene, "drq+dbc", update_rule="dbc")[0])


# ------------------------------------------------------------------ table, findings, figure
def _record(mode, scene, method, seed, intended, own=None, upper=None):
    errors = {
        "mean_relative_error": intended,
        "max_relative_error": 2 * intended,
        "mean_relative_error_upper": intended if upper is None else upper,
        "per_pair_mean_relative_error": 1.5 * intended,
        "spearman": 0.9,
    }
    return {
        "mode": mode,
        "scene": scene,
        "method": method,
        "seed": seed,
        "samples_per_pair": 1,
        "steps": 1500,
        "batch": 64,
        "image_size": 32,
        "mc_samples": 2000,
        "draws": 8,
        "device": "cpu",
        "invariance": {"seen": 0.03, "held_out": 0.2},
        "intended": {"name": "pi", "errors": errors, "held_out_errors": errors},
        "own": {"name": None}
        if own is None
        else {"name": "eps-bar-reward", "errors": {"mean_relative_error": own, "max_relative_error": 3 * own}},
    }


def _write(folder, records):
    for r in records:
        path = folder / r["mode"] / r["scene"] / r["method"] / f"seed{r['seed']}" / "summary.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(r))


def test_aggregate_is_the_projects_interval_over_seeds(tmp_path):
    values = [0.02, 0.03, 0.05, 0.04, 0.01]
    _write(tmp_path, [_record("isolated", "ring", "eps-r", s, v, own=v / 2) for s, v in enumerate(values)])
    cells = aggregate(load_records(tmp_path), reps=2000)
    row = cells[("isolated", "ring", "eps-r")]
    est = interval_estimates(np.asarray(values)[:, None], reps=2000, rng=0)["mean"]
    assert row["intended_mean"]["mean"] == pytest.approx(np.mean(values))
    assert (row["intended_mean"]["low"], row["intended_mean"]["high"]) == (est.low, est.high)
    assert row["intended_mean"]["low"] < np.mean(values) < row["intended_mean"]["high"]
    assert row["seeds"] == [0, 1, 2, 3, 4] and row["own_mean"]["mean"] == pytest.approx(np.mean(values) / 2)


@pytest.mark.parametrize(
    "entangled, independent, verdict",
    [
        (0.02, 0.2, "the entangled coupling is closer (eps-r)"),
        (0.2, 0.02, "the independent coupling is closer (indep-r)"),
        (0.05, 0.05, "the intervals overlap"),
    ],
)
def test_findings_say_which_coupling_is_closer_whatever_the_sign(tmp_path, entangled, independent, verdict):
    jitter = [0.9, 1.0, 1.1, 0.95, 1.05]
    _write(
        tmp_path,
        [_record("isolated", "ring", "eps-r", s, entangled * j, own=0.01) for s, j in enumerate(jitter)]
        + [_record("isolated", "ring", "indep-r", s, independent * j) for s, j in enumerate(jitter)],
    )
    lines = findings(aggregate(load_records(tmp_path), reps=500))
    pair = [x for x in lines if "reward ground" in x]
    assert len(pair) == 1 and verdict in pair[0] and "5 seeds" in pair[0]
    target = [x for x in lines if "own fixed point" in x]
    assert len(target) == 1 and target[0].endswith("met with the interval.")


def test_agent_mode_is_held_to_the_same_marks_against_its_own_fixed_point(tmp_path):
    jitter = [0.9, 1.0, 1.1, 0.95, 1.05]
    _write(
        tmp_path,
        [_record("agent", "ring", "eps-pi", s, 0.2, own=0.12 * j) for s, j in enumerate(jitter)]
        + [_record("isolated", "ring", "eps-pi", 0, 0.2, own=0.01)],
    )
    target = [x for x in findings(aggregate(load_records(tmp_path), reps=500)) if "own fixed point" in x]
    assert len(target) == 2
    assert target[0].startswith("isolated, ring, eps-pi") and target[0].endswith("met by its one seed (no interval).")
    assert target[1].startswith("agent, ring, eps-pi") and target[1].endswith(": missed.")


def test_table_figure_and_page_come_from_the_records(tmp_path, capsys):
    records = tmp_path / "records"
    _write(
        records,
        [
            _record(m, sc, me, s, 0.1 + 0.01 * s, own=None if me == "dbc" else 0.02, upper=0.15)
            for m in ("isolated", "agent")
            for sc in ("ring", "sprite")
            for me in ("eps-r", "indep-r", "dbc")
            for s in range(3)
        ],
    )
    page = tmp_path / "page.md"
    page.write_text(f"# Study\n\nbefore\n{BEGIN}\nplaceholder\n{END}\nafter\n")
    figure, table = tmp_path / "f.png", tmp_path / "t.md"
    assert (
        figure_main(["--records", str(records), "--out", str(figure), "--table", str(table), "--page", str(page)]) == 0
    )
    assert figure.stat().st_size > 10_000
    text = table.read_text()
    assert "| ring | eps-r | entangled | pi: 11.0% [" in text and "(at most 15.0%)" in text
    assert "| sprite | dbc | DBC |" in text and "none: –" in text
    body = page.read_text()
    assert body.startswith("# Study\n\nbefore\n") and body.endswith("after\n") and "placeholder" not in body
    assert "Generated from 36 records" in body and "![the learned metric" in body
    assert "**12 of the 36 cells have a record, 0 of them all 5 seeds**" in body
    page.write_text("no markers\n")
    capsys.readouterr()
    assert (
        figure_main(["--records", str(records), "--out", str(figure), "--table", str(table), "--page", str(page)]) == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: page: ") and page.read_text() == "no markers\n"


def test_the_page_says_when_every_cell_has_all_its_seeds():
    grid = [(m, sc, me) for m in MODES for sc in SCENES for me in METHOD_ORDER]
    full = {key: {"seeds": list(range(SEEDS))} for key in grid}
    assert coverage(full) == "**Every one of the 36 cells has all 5 seeds.**"
    partial = dict(full)
    partial[grid[0]] = {"seeds": [0, 1]}
    del partial[grid[1]]
    assert coverage(partial).startswith("**35 of the 36 cells have a record, 34 of them all 5 seeds**")


def test_a_record_without_a_field_is_named(tmp_path):
    record = _record("isolated", "ring", "eps-r", 0, 0.1)
    del record["intended"]
    _write(tmp_path, [record])
    with pytest.raises(InputError, match=r"seed0/summary.json: no field 'intended'"):
        load_records(tmp_path)
