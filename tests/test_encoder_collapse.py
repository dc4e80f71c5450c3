"""The encoder-collapse benchmark: same data and start for every variant, its trace, its bad input."""

import json

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("dm_control")

from benchmarks import encoder_collapse  # noqa: E402


def test_a_tiny_run_traces_every_variant_from_the_same_start(tmp_path, capsys):
    out, figure = tmp_path / "collapse.json", tmp_path / "collapse.png"
    argv = [
        "--transitions",
        "80",
        "--updates",
        "4",
        "--every",
        "2",
        "--variants",
        "drq,eps-r,eps-r no model grad",
        "--out",
        str(out),
        "--figure",
        str(figure),
    ]
    assert encoder_collapse.main(argv) == 0
    record = json.loads(out.read_text())
    assert [v["variant"] for v in record["variants"]] == ["drq", "eps-r", "eps-r no model grad"]
    for trace in record["variants"]:
        assert trace["update"] == [0, 2, 4]
        assert all(np.isfinite(s) and s >= 0 for s in trace["latent_spread"])
    drq, eps_r, detached = record["variants"]
    # the same initial weights: one spread before any update, and the world-model heads of both eps-r runs
    assert drq["latent_spread"][0] == eps_r["latent_spread"][0] == detached["latent_spread"][0]
    assert drq["inverse_alive"] == [None] * 3 and 0 < eps_r["inverse_alive"][0] <= 1
    assert "transition_loss" in eps_r["losses"][-1] and "transition_loss" not in drq["losses"][-1]
    assert detached["changes"] == {"model_grad": False}
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "eps-r no model grad: latent spread 0:" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--variants", "drq,foo"], "variants: 'foo' (item 1) is not one of"),
        (["--variants", "drq,drq"], "variants: 'drq' (item 1) is named twice"),
        (["--updates", "0"], "updates:"),
        (["--transitions", "1"], "transitions:"),
        (["--task", "walker-run"], "task:"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, args, message):
    out = tmp_path / "c.json"
    assert encoder_collapse.main([*args, "--out", str(out)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines
    assert not out.exists()


def test_the_default_runs_every_variant_once():
    assert encoder_collapse.parse_variants(",".join(encoder_collapse.VARIANTS)) == list(encoder_collapse.VARIANTS)
