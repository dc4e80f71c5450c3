"""DrQ's update against ours, update by update: the batches it replays and the comparison of both update paths."""

import pytest


@pytest.mark.slow  # the 84-pixel networks at 1024 units, twice; tests/test_agent.py holds the update to DrQ's
def test_drq_compare_matches_drqs_update_on_the_plain_path_and_measures_the_fast_one():
    """benchmarks.drq_compare (the diagnosis, here on random pixels, batch 8, 10 updates): the
    float32 path gives DrQ's losses and Q values with the same weights, to float32's rounding along the
    networks (benchmarks.tolerance.loss_rtol: 2.6e-4 for the 84-pixel encoder, actor and critic), and the
    bf16 path differs measurably, by little."""
    import torch

    from agents.encoder import conv_output_side
    from benchmarks.drq_compare import batches, compare
    from benchmarks.drq_reference import DrQ
    from benchmarks.tolerance import loss_rtol

    data = batches("random", 10, 8)
    plain, fast = compare("plain", data, torch.device("cpu")), compare("fast", data, torch.device("cpu"))
    ref = DrQ(9, conv_output_side(84), 1, hidden=1024)
    rtol = loss_rtol(ref.critic.encoder, ref.actor.trunk, ref.critic.Q1)
    for key in ("critic", "q", "actor"):
        assert plain["same_weights"][key]["max_rel"] < rtol, (key, plain["same_weights"])
    assert 0 < fast["same_weights"]["critic"]["max_rel"] < 1e-2, fast["same_weights"]
    assert len(plain["free_run"]["ours"]) == 10 and plain["free_run"]["last10_median_rel"] < 1e-3


def test_random_batches_stack_frames_as_a_replay_buffer_does():
    from benchmarks.drq_compare import batches

    one, again = batches("random", 2, 3, seed=4), batches("random", 2, 3, seed=4)
    assert len(one) == 2 and one[0]["obs"].shape == one[0]["next_obs"].shape == (3, 9, 84, 84)
    # the next observation drops the oldest frame and appends one
    assert (one[0]["next_obs"][:, :6] == one[0]["obs"][:, 3:]).all()
    assert (one[1]["obs"] == again[1]["obs"]).all() and one[0]["action"].shape == (3, 1)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--paths", "plain,nope"], "error: paths: unknown nope"),
        (["--updates", "5"], "error: updates: at least 10; batch: positive"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(capsys, args, message):
    pytest.importorskip("torch")
    from benchmarks.drq_compare import main

    assert main(args) == 2
    assert capsys.readouterr().err == message + "\n"
