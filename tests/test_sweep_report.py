"""The sweep report: the status of each run and the tables and aggregates gathered per condition."""

import json
from pathlib import Path


def test_gather_of_the_paper_sweep_adds_aggregates_and_names_missing_seeds(tmp_path):
    """The paper preset's sweep file, every run of one condition evaluated (known returns) and one seed of
    another missing: gather writes the first's aggregates and one line naming the missing seed."""
    from agents.sweep.spec import load_spec
    from bisimkit.files import atomic_write_json
    from bisimkit_runs.sweeps import RUNS_DIR, SWEEP_FILE
    from figures.sweep_report import gather

    spec = load_spec(Path(__file__).resolve().parents[1] / "agents" / "sweep" / "paper" / "paper.toml")
    runs = spec.runs()
    root = tmp_path / "paper"
    atomic_write_json(
        root / SWEEP_FILE,
        {"grid": spec.grid_record(), "runs": [{"name": r.name, "values": r.values, "config": r.config} for r in runs]},
    )
    chosen = [
        r
        for r in runs
        if r.values["condition"] in ("distractions", "no-camera")
        and r.values["task"] in ("cartpole-swingup", "walker-walk")
        and r.values["method"] in ("drq", "eps-r")
    ]
    for k, run in enumerate(chosen):
        if (
            run.values["condition"] == "no-camera"
            and run.values["seed"] == 4
            and run.values["method"] == "drq"
            and run.values["task"] == "walker-walk"
        ):
            continue
        folder = root / RUNS_DIR / run.name
        folder.mkdir(parents=True)
        (folder / "config.json").write_text(json.dumps({"config": run.config, "device": "cpu"}))
        (folder / "eval.csv").write_text(
            f"env_step,mean_return,std_return,episodes,split,elapsed_s\n2000000,{100 + 37 * k % 800},0,10,eval,1.0\n"
        )
    result = gather(root, tmp_path / "out", reps=300)
    files = result["conditions"]["distractions"]
    assert Path(files["aggregates_markdown"]).name == "aggregates-distractions.md"
    assert Path(files["aggregates_profiles"]).is_file() and Path(files["aggregates_csv"]).is_file()
    table = (tmp_path / "out" / "table-distractions.md").read_text()
    assert "### Aggregates over tasks" in table and "| DrQ | 5 |" in table
    other = (tmp_path / "out" / "table-no-camera.md").read_text()
    assert "*Aggregates not computed: runs: missing seeds: DrQ on walker-walk lacks seed(s) 4" in other
    assert "aggregates_markdown" not in result["conditions"]["no-camera"]
