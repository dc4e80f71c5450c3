"""Reading run folders: the runs found, grouped by configuration, a group split by the learning fields only."""

from run_folders import write_run


def test_a_learning_field_splits_a_method_and_a_missing_one_is_unset(tmp_path):
    from bisimkit_runs.runs import find_runs, group_runs

    write_run(tmp_path, "walker-walk", "eps-r", 0, [(0, 0)], "a", batch_size=128, beta=0.5)
    write_run(tmp_path, "walker-walk", "eps-r", 1, [(0, 0)], "b", batch_size=512, beta=0.5)
    write_run(tmp_path, "walker-walk", "eps-r", 2, [(0, 0)], "c", beta=0.5)  # an older config.json
    write_run(tmp_path, "walker-walk", "drq", 0, [(0, 0)], "d", batch_size=512, beta=0.0)
    labels = [g.label for g in group_runs(find_runs(tmp_path))]
    assert labels == ["DrQ", "ε-R (batch_size=128)", "ε-R (batch_size=512)", "ε-R (batch_size=unset)"]


def test_fields_of_another_task_and_later_fields_do_not_split_older_runs(tmp_path):
    """A DCS run written before the CARLA fields and ``augment`` existed groups with one that states
    them (carla_* do not apply to walker-walk; a missing augment is None, each method's own choice);
    a different augment does split."""
    from bisimkit_runs.runs import find_runs, group_runs

    write_run(tmp_path, "walker-walk", "eps-r", 0, [(0, 0)], "old", beta=0.5)
    write_run(
        tmp_path,
        "walker-walk",
        "eps-r",
        1,
        [(0, 0)],
        "new",
        beta=0.5,
        augment=None,
        carla_town="Town04",
        carla_cameras=5,
    )
    write_run(tmp_path, "walker-walk", "eps-r", 2, [(0, 0)], "off", beta=0.5, augment=False)
    groups = group_runs(find_runs(tmp_path))
    assert sorted((g.label, g.seeds) for g in groups) == [("ε-R (augment=False)", (2,)), ("ε-R (augment=auto)", (0, 1))]
