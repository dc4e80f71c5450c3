"""The CPU learning check (benchmarks/learning_check.py): its pass rule, its configurations, a run of seconds
and its bad input (the check itself is not a test)."""

import json
from dataclasses import replace

import pytest

pytest.importorskip("torch")
pytest.importorskip("dm_control")

from benchmarks import learning_check  # noqa: E402
from benchmarks.learning_check import CHECK_CONFIG, check_config, verdict  # noqa: E402


def test_the_last_three_evaluations_must_clear_the_random_policy():
    random = [120.0, 140.0]  # mean 130, std 10: the margin of 100 dominates 3 std
    passed, last, mark = verdict([10, 50, 240, 250, 260], random)
    assert passed and last == 250 and mark == 230
    assert not verdict([10, 50, 400, 150, 100], random)[0]  # one lucky evaluation is not enough
    assert not verdict([240, 250, 260], random)[0]  # no untrained starting point: not a curve
    wide = [0.0, 200.0]  # mean 100, std 100: 3 std dominates the margin
    assert verdict([0, 0, 390, 410, 400], wide) == (True, 400.0, 400.0)
    assert verdict([0, 0, 390, 410, 390], wide)[0] is False


def test_check_config_is_cpu_sized_and_valid():
    cfg = CHECK_CONFIG.validated()
    assert cfg.device == "cpu" and cfg.method == "drq" and cfg.stacked_frames
    assert not cfg.background and not cfg.camera


def test_check_config_per_method_and_setting():
    assert check_config() == CHECK_CONFIG  # the default check is DrQ without distractions
    eps_r = check_config("eps-r", distractions=True)
    assert eps_r.method == "eps-r" and eps_r.background and eps_r.camera
    assert replace(eps_r, method="drq", background=False, camera=False) == CHECK_CONFIG  # nothing else differs
    resolved = eps_r.resolved()
    assert resolved.world_model and resolved.beta > 0 and not resolved.target_encoder


def _tiny(monkeypatch):
    """A check of seconds: 40 environment steps (20 agent steps, 5 updates) at 32 px, episodes of 20 control steps."""
    tiny = replace(
        CHECK_CONFIG,
        image_size=32,
        batch_size=8,
        buffer_size=100,
        seed_steps=15,
        episode_steps=20,
        eval_every=20,
        eval_episodes=1,
        checkpoint_every=20,
    )
    monkeypatch.setattr(learning_check, "CHECK_CONFIG", tiny)
    monkeypatch.setattr(learning_check, "RANDOM_EPISODES", 2)


def test_both_methods_under_distractions_on_one_figure(tmp_path, monkeypatch, capsys):
    _tiny(monkeypatch)
    out = tmp_path / "check"
    rc = learning_check.main(["--method", "eps-r,drq", "--distractions", "--env-steps", "40", "--out", str(out)])
    printed = capsys.readouterr().out.splitlines()
    assert rc == 1  # 3 evaluations (0, 20, 40) cannot make a pass
    assert [line.split(":")[:2] for line in printed] == [["FAIL", " ε-R"], ["FAIL", " DrQ"]]
    record = json.loads((out / "learning.json").read_text())
    assert record["distractions"] and list(record["methods"]) == ["eps-r", "drq"] and not record["passed"]
    assert len(record["random_returns"]) == 2
    for method, run in record["methods"].items():
        assert run["config"]["method"] == method and run["config"]["background"] and run["config"]["camera"]
        assert run["steps"] == [0, 20, 40] and run["random_returns"] == record["random_returns"]
        saved = json.loads((out / method / "config.json").read_text())
        assert saved["config"]["method"] == method and saved["eval_backgrounds"] != "no background distraction"
    assert (out / "learning.png").stat().st_size > 0
    # a finished check is read back, not trained again
    rc = learning_check.main(
        ["--method", "eps-r,drq", "--distractions", "--env-steps", "40", "--out", str(out), "--resume"]
    )
    assert rc == 1 and json.loads((out / "learning.json").read_text())["methods"]["drq"]["steps"] == [0, 20, 40]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--method", "sac"], "method: 'sac' (item 0) is not one of drq, eps-r"),  # no check setting for it
        (["--method", "drq+dbc"], "method: 'drq+dbc' (item 0) is not one of drq, eps-r"),
        (["--method", "eps-r,foo"], "method: 'foo' (item 1) is not one of drq, eps-r"),
        (["--method", "drq,drq"], "method: 'drq' (item 1) is named twice"),
        (["--method", ""], "method: '' (item 0) is not one of drq, eps-r"),
        (["--task", "walker-run"], "task: 'walker-run' is not one of"),
        (["--env-steps", "1000"], "seed_steps:"),  # the run would never update
        (["--env-steps", "many"], "env_steps: invalid int value"),
        (["--distractions", "yes"], "unrecognized arguments: yes"),
        (["--method", "eps-r", "--bisim-warmup", "-1"], "bisim_warmup:"),
        (["--method", "eps-r", "--beta", "-0.1"], "beta:"),
        (["--method", "eps-r", "--beta", "nan"], "beta:"),
        (["--method", "drq", "--beta", "0.1"], "beta: 0.1 is given, and drq has no bisimulation loss"),
        (["--method", "eps-r,drq", "--beta", "0.1"], "drq has no bisimulation loss"),
        (["--method", "drq", "--no-model-grad"], "model_grad: drq trains no transition or reward model"),
        (["--method", "drq", "--spread-units"], "spread_units: drq has no distance head"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, args, message):
    out = tmp_path / "check"
    assert learning_check.main(["--out", str(out), *args]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines
    assert not out.exists()


def test_the_warm_up_reaches_the_trained_configuration(tmp_path, monkeypatch):
    seen = {}

    def fake_train(cfg, folder, **kwargs):
        seen[cfg.method] = cfg
        raise learning_check.InputError("stop here", param="out")  # nothing trained, nothing written

    monkeypatch.setattr(learning_check, "train", fake_train)
    argv = ["--method", "eps-r", "--distractions", "--bisim-warmup", "2000", "--out", str(tmp_path / "c")]
    assert learning_check.main(argv) == 2
    assert seen["eps-r"].bisim_warmup == 2000 and seen["eps-r"].background
    assert replace(seen["eps-r"], bisim_warmup=0) == check_config("eps-r", distractions=True)


def test_beta_model_grad_and_spread_units_reach_the_trained_configuration(tmp_path, monkeypatch):
    seen = {}

    def fake_train(cfg, folder, **kwargs):
        seen[cfg.method] = cfg
        raise learning_check.InputError("stop here", param="out")

    monkeypatch.setattr(learning_check, "train", fake_train)
    assert learning_check.main(["--method", "eps-r", "--beta", "0.1", "--out", str(tmp_path / "c")]) == 2
    assert seen["eps-r"].beta == 0.1
    assert replace(seen["eps-r"], beta=None) == check_config("eps-r")
    assert learning_check.main(["--method", "eps-r", "--out", str(tmp_path / "d")]) == 2
    assert seen["eps-r"].resolved().beta == 0.5 and seen["eps-r"].model_grad  # the presets' when none is given
    assert learning_check.main(["--method", "eps-r", "--no-model-grad", "--out", str(tmp_path / "e")]) == 2
    assert seen["eps-r"].model_grad is False
    assert not seen["eps-r"].spread_units  # the paper's when not asked
    assert learning_check.main(["--method", "eps-r", "--spread-units", "--out", str(tmp_path / "f")]) == 2
    assert seen["eps-r"].spread_units is True and seen["eps-r"].model_grad
