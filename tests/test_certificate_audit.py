"""The certificate audit: its record keeps its cases across runs and refuses a record of another seed."""


def test_the_audit_command_keeps_its_cases_and_refuses_a_record_of_another_seed(tmp_path, capsys):
    """``benchmarks.certificate_audit``: the same seed draws the same cases, a longer run keeps the
    cases already recorded, and a record of another seed is refused in one line (exit 2)."""
    import json

    from benchmarks.certificate_audit import main

    out = tmp_path / "audit.json"
    args = ["--seed", "5", "--out", str(out), "--families", "random,ulp-policy", "--metrics", "pi,eps"]
    assert main(["--cases", "3", *args]) == 0
    first = json.loads(out.read_text())
    assert [c["index"] for c in first["cases"]] == [0, 1, 2] and first["summary"]["cases"] == 3
    assert {c["family"] for c in first["cases"]} <= {"random", "ulp-policy"}
    assert {c["metric"] for c in first["cases"]} <= {"pi", "eps"}
    assert main(["--cases", "4", *args]) == 0
    second = json.loads(out.read_text())
    assert second["cases"][:3] == first["cases"] and len(second["cases"]) == 4
    assert "3 cases already in" in capsys.readouterr().out
    again = tmp_path / "again.json"
    assert main(["--cases", "4", *args[:2], "--out", str(again), *args[4:]]) == 0
    strip = lambda cases: [{k: v for k, v in c.items() if not k.endswith("seconds")} for c in cases]  # noqa: E731
    assert strip(json.loads(again.read_text())["cases"]) == strip(second["cases"])
    assert main(["--cases", "4", "--seed", "6", *args[2:]]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds seed = 5, not 6" in err[0]
    assert main(["--cases", "2", "--seed", "5", "--out", str(tmp_path / "x.json"), "--metrics", "pi,dbc"]) == 2
    assert "--metrics[1] = 'dbc'" in capsys.readouterr().err
