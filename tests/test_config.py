"""The training config: one dataclass is the CLI, presets, validation, resume semantics, checkpoint format."""

import json
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

import pytest  # noqa: E402
import torch  # noqa: E402

from agents.checkpoint import CHECKPOINT  # noqa: E402
from agents.config import FIELDS, PRESETS, TrainConfig, field_docs, make_config, presets_markdown  # noqa: E402
from agents.train import build_parser, config_from_args  # noqa: E402
from bisimkit.errors import InputError  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def test_every_field_is_a_flag_with_its_docstring_as_help():
    docs = field_docs()
    assert set(docs) == set(FIELDS), set(FIELDS) ^ set(docs)
    text = build_parser().format_help()
    for name in FIELDS:
        flag = "--" + name.replace("_", "-")
        assert flag in text, flag
        assert " ".join(docs[name].split()[:3]) in " ".join(text.split()), name


def test_flags_reach_the_config_and_unset_flags_keep_the_preset():
    args = build_parser().parse_args(
        [
            "--preset",
            "drq",
            "--aug-k",
            "1",
            "--no-target-encoder",
            "--tau",
            "0.5",
            "--alpha-beta1",
            "0.7",
            "--latent-squash",
            "none",
            "--beta",
            "0.25",
        ]
    )
    cfg, explicit = config_from_args(args)
    assert explicit == {
        "preset": "drq",
        "aug_k": 1,
        "target_encoder": False,
        "tau": 0.5,
        "alpha_beta1": 0.7,
        "latent_squash": "none",
        "beta": 0.25,
    }
    assert (cfg.aug_k, cfg.aug_m, cfg.target_encoder, cfg.tau, cfg.alpha_beta1) == (1, 2, False, 0.5, 0.7)
    assert cfg.stacked_frames and cfg.actor_head and cfg.method == "drq" and not cfg.background  # the preset's
    default, _ = config_from_args(build_parser().parse_args([]))
    assert default == TrainConfig() and default.preset == "paper"


def test_presets_hold_their_documented_values():
    paper, drq, dbc = (make_config(p).resolved() for p in ("paper", "drq", "dbc"))
    assert paper.env_steps == 2_000_000 and not paper.stacked_frames and not paper.actor_head
    assert paper.target_encoder and paper.views == (2, 2) and paper.beta == 0.5 and paper.alpha_lr == 1e-4
    assert (drq.stacked_frames, drq.target_encoder, drq.encoder_tau, drq.views, drq.actor_head) == (
        True,
        True,
        0.01,
        (2, 2),
        True,
    )
    assert (drq.alpha_lr, drq.alpha_beta1, drq.batch_size, drq.method) == (1e-3, 0.9, 512, "drq")
    assert (dbc.method, dbc.encoder_tau, dbc.latent_squash, dbc.beta, dbc.alpha_beta1) == (
        "drq+dbc",
        0.05,
        "none",
        0.5,
        0.5,
    )
    # DBC's own agent: its update, no DrQ shifts, batch 128 (run_local.sh), its transition init
    assert (dbc.update_rule, dbc.views, dbc.batch_size, dbc.transition_sigma_init, dbc.distance_scale) == (
        "dbc",
        (1, 1),
        128,
        None,
        None,
    )
    assert (paper.update_rule, paper.transition_sigma_init, drq.update_rule) == ("joint", 0.5, "joint")
    assert make_config("paper", method="drq+dbc").resolved().transition_sigma_init == 0.5
    assert make_config("paper", method="drq+dbc").resolved().latent_squash == "none"
    assert make_config("paper", method="sac").resolved().views == (1, 1)  # no augmentation, one view
    for name, preset in PRESETS.items():
        assert set(preset.values) <= set(FIELDS) and set(preset.sources) <= set(FIELDS), name
    table = presets_markdown()
    assert "| `encoder_tau` | 0.05 | 0.01 | 0.05 |" in table


def test_docs_hold_the_current_presets_table():
    assert presets_markdown() in (ROOT / "docs" / "agents.md").read_text()


def test_the_smoke_preset_validates_and_reaches_every_part_on_every_task():
    from agents.dcs import TASKS

    for task, spec in TASKS.items():
        cfg = make_config("smoke", task=task).resolved()  # validated: seed steps leave updates to do
        agent_steps = -(-cfg.env_steps // spec.action_repeat)
        assert agent_steps - cfg.seed_steps >= 100, task  # Trainer.learn: one update per step past seeding
        assert cfg.eval_every < cfg.env_steps and cfg.checkpoint_every < cfg.env_steps  # both before the end
        assert cfg.episode_steps <= cfg.checkpoint_every  # an episode ends (checkpoints wait for one)
        episode = -(-cfg.episode_steps // spec.action_repeat) * spec.action_repeat  # env steps, rounded up
        assert cfg.env_steps % episode == 0, task  # the run ends at an episode end (where it checkpoints)
        assert cfg.batch_size <= cfg.buffer_size and agent_steps <= cfg.buffer_size
    assert make_config("smoke", method="drq").method == "drq"  # the preset leaves the method to --method


def test_a_smoke_run_collects_updates_evaluates_and_checkpoints(tmp_path, monkeypatch):
    """The smoke preset through the real Trainer, the gradient step replaced by a counter (the full run
    with real updates is the slow test below)."""
    from agents import agent as agent_module
    from agents.checkpoint import load_checkpoint
    from agents.train import train

    calls = []
    monkeypatch.setattr(agent_module.Agent, "update", lambda self, batch: calls.append(len(batch["action"])) or {})
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        summary = train(make_config("smoke", device="cpu"), tmp_path / "run", progress=False, tensorboard=False)
    finally:
        torch.set_num_threads(threads)
    cfg = make_config("smoke")
    assert summary["env_steps"] == cfg.env_steps
    assert len(calls) == cfg.env_steps // 8 - cfg.seed_steps and set(calls) == {cfg.batch_size}  # repeat 8
    eval_steps = [int(line.split(",")[0]) for line in (tmp_path / "run" / "eval.csv").read_text().splitlines()[1:]]
    assert eval_steps == [0, 1000, 2000]
    assert load_checkpoint(tmp_path / "run" / CHECKPOINT).complete


def test_a_run_ending_mid_episode_on_an_evaluation_boundary_checkpoints(tmp_path, monkeypatch):
    """2000 env steps in episodes of 480 (repeat 8): the run stops 80 env steps into its fifth
    episode, exactly where an evaluation is due; it must still end with a complete checkpoint."""
    from agents import agent as agent_module
    from agents.checkpoint import load_checkpoint
    from agents.train import train

    monkeypatch.setattr(agent_module.Agent, "update", lambda self, batch: {})
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        train(
            make_config("smoke", device="cpu", episode_steps=480), tmp_path / "run", progress=False, tensorboard=False
        )
    finally:
        torch.set_num_threads(threads)
    eval_steps = [int(line.split(",")[0]) for line in (tmp_path / "run" / "eval.csv").read_text().splitlines()[1:]]
    assert eval_steps == [0, 1000, 2000]  # evaluated once at the end, not twice
    checkpoint = load_checkpoint(tmp_path / "run" / CHECKPOINT)
    assert checkpoint.complete and checkpoint.last_checkpoint == 2000


@pytest.mark.slow
def test_the_smoke_command_trains_for_real(tmp_path):
    """The documented command, real updates included (25-50 s on 2 cores; one torch thread, as two
    threads on cores other jobs share can take minutes)."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "agents.train",
            "--preset",
            "smoke",
            "--task",
            "cartpole-swingup",
            "--method",
            "eps-r",
            "--out",
            str(tmp_path / "smoke"),
            "--quiet",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, proc.stderr
    rows = (tmp_path / "smoke" / "train.csv").read_text().splitlines()
    header = rows[0].split(",")
    losses = [dict(zip(header, row.split(",")))["critic_loss"] for row in rows[1:]]
    assert any(loss not in ("", "nan") for loss in losses)  # updates happened
    assert json.loads(proc.stdout)["env_steps"] == 2000


@pytest.mark.parametrize(
    "args, message",
    [
        (["--preset", "sota"], "preset: 'sota' is not one of paper, drq, dbc, smoke"),
        (["--aug-k", "0"], "aug_k: 0 is not a positive integer"),
        (["--aug-m", "-2"], "aug_m: -2 is not a positive integer"),
        (["--tau", "0"], "tau: 0.0 is not in (0, 1]"),
        (["--encoder-tau", "1.5"], "encoder_tau: 1.5 is not in (0, 1]"),
        (["--alpha-beta1", "1"], "alpha_beta1: 1.0 is not in [0, 1)"),
        (["--latent-squash", "relu"], "latent_squash: 'relu' is not one of tanh, none"),
        (["--transition-sigma-init", "20"], "transition_sigma_init: 20.0 is not strictly between"),
        (["--distance-scale", "-1"], "distance_scale: -1.0 is not a positive finite number"),
        (["--batch-size", "many"], "batch_size: 'many' is not an integer"),
        (["--lr", "fast"], "lr: 'fast' is not a number"),
        (["--target-encoder", "yes"], "unrecognized arguments: yes"),
        (["--graphs", "--device", "cpu"], "graphs: CUDA graphs need a CUDA device, and device is cpu"),
        (["--update-rule", "sgd"], "update_rule: 'sgd' is not one of joint, dbc"),
        (["--preset", "dbc", "--augment"], "augment: update_rule dbc is DBC's update on unshifted observations"),
    ],
)
def test_bad_flags_exit_2_with_one_line_and_write_nothing(tmp_path, args, message):
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "agents.train", *args, "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], proc.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    "preset, changes, message",
    [
        ("paper", dict(update_rule="dbc"), "method: update_rule dbc is DBC's update of drq+dbc, and method is eps-r"),
        (
            "paper",
            dict(update_rule="dbc", method="drq+dbc"),
            "augment: update_rule dbc is DBC's update on unshifted observations, and augment is on",
        ),
        ("dbc", dict(method="eps-pi"), "method: update_rule dbc is DBC's update of drq+dbc, and method is eps-pi"),
        ("dbc", dict(aux=False), "aux: update_rule dbc trains DBC's transition and reward models, and aux is off"),
        ("dbc", dict(distance_scale=0.1), "distance_scale: update_rule dbc compares latents coordinate by coordinate"),
        (
            "dbc",
            dict(transition_sigma_max=0.4, transition_sigma_init=0.5),
            "transition_sigma_init: 0.5 is not strictly between",
        ),
        ("paper", dict(transition_sigma_max=0.4), "transition_sigma_init: 0.5 is not strictly between"),  # the default
        ("dbc", dict(update_rule="joint", augment=None), None),  # the joint update of drq+dbc, shifts back on
        ("dbc", dict(transition_sigma_max=0.4), None),  # DBC's own init has no starting sigma to check
    ],
)
def test_dbc_update_rule_refuses_what_it_cannot_honour(preset, changes, message):
    """DBC's update runs drq+dbc on unshifted observations with its world model and no distance head: a
    contradicting field is one error naming it (the command line shows it as above, exit 2)."""
    if message is None:
        make_config(preset, **changes).resolved()
        return
    with pytest.raises(InputError) as info:
        make_config(preset, **changes)
    assert str(info.value).startswith(message), str(info.value)


def test_config_file_fields_are_checked(tmp_path):
    with pytest.raises(InputError, match="^config: unknown field"):
        TrainConfig.from_dict({**TrainConfig().to_dict(), "k_views": 2})
    with pytest.raises(InputError, match="^aug_k: '2' is not a positive integer"):
        TrainConfig.from_dict({**TrainConfig().to_dict(), "aug_k": "2"})
    with pytest.raises(InputError, match="^target_encoder: 1 is not true or false"):
        TrainConfig.from_dict({**TrainConfig().to_dict(), "target_encoder": 1})


def test_a_run_that_would_never_update_is_refused(tmp_path):
    """--env-steps 2000 on cartpole (action repeat 8) is 250 agent steps: 1000 seed steps leave no update."""
    with pytest.raises(InputError, match=r"^seed_steps: 1000 agent steps .* 250 agent steps at action repeat 8\)"):
        make_config("paper", task="cartpole-swingup", env_steps=2000)
    assert make_config("paper", task="cartpole-swingup", env_steps=2000, seed_steps=100).seed_steps == 100
