"""``bisimkit compare``'s checks: every bad option is one line with exit status 2, before any output exists."""

import pytest

from bisimkit_cli.main import main


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--metrics", "pi,nope"], "--metrics: unknown metric 'nope'"),
        (["--metrics", "pi", "--diff", "pi,mico"], "--diff: 'mico' is not among"),
        (["--metrics", "pi", "--state", "99"], "--state: 99 is not a state"),
        (["--metrics", "pi,eps", "--ground", "nofile.npy"], "nofile.npy"),
        (["--metrics", "pi,mico", "--ground", "policy"], "--ground: none of pi, mico has a ground term"),
    ],
)
def test_compare_bad_input(tmp_path, capsys, args, expected):
    out = tmp_path / "never"
    assert main(["compare", "mirrored-rooms-policy", *args, "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0], err
    assert list(tmp_path.iterdir()) == []  # no output folder, no temporary one


def test_compare_policy_needed(tmp_path, capsys):
    assert main(["compare", "mirrored-rooms", "--metrics", "bisim,pi", "--out", str(tmp_path / "x")]) == 2
    assert "needs a policy" in capsys.readouterr().err
