"""``python -m agents.evaluate``'s own parts: the summary lines, the parser's defaults, one-line refusals before
anything is restored."""

import pytest

from agents.evaluate import build_parser, evaluate_checkpoint, format_summary, main
from bisimkit.errors import InputError

RESULT = {
    "task": "walker-walk",
    "method": "eps-r",
    "run_seed": 1,
    "env_steps": 2000,
    "mean_return": 12.345,
    "std_return": 1.5,
    "episodes": 3,
    "split": "eval",
    "seed": 0,
    "backgrounds": "procedural",
    "videos": ["bear", "bear", "boat"],
}


def test_the_summary_counts_the_videos():
    head, tail = format_summary(RESULT).splitlines()
    assert head == (
        "walker-walk eps-r (run seed 1, 2000 env steps): return 12.35 ± 1.50 over 3 episodes (split eval, seed 0)"
    )
    assert tail == "backgrounds: procedural; videos: bear x2, boat"
    plain = format_summary({**RESULT, "episodes": 1, "videos": [None]})
    assert "over 1 episode (" in plain and plain.endswith("backgrounds: procedural")


def test_the_parser_defaults():
    args = build_parser().parse_args(["run"])
    assert (args.path, args.episodes, args.split, args.seed, args.device, args.json) == (
        "run",
        10,
        "eval",
        0,
        "auto",
        None,
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"episodes": 0}, r"^episodes: 0 is not a positive integer$"),
        ({"seed": -1}, r"^seed: -1 is not a non-negative integer$"),
        ({"split": "test"}, r"^split: 'test' is not one of "),
    ],
)
def test_bad_settings_are_refused_before_any_restore(tmp_path, kwargs, message):
    with pytest.raises(InputError, match=message):
        evaluate_checkpoint(tmp_path / "missing", **kwargs)


def test_the_command_says_one_line_and_exits_2(tmp_path, capsys):
    assert main([str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: checkpoint: no such file or folder: ") and err.count("\n") == 1
