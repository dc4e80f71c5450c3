"""validation/verify_worker.py: the loss checks of a verify run, always as a LossWorker."""

from validation.verify_plan import plan_run
from validation.verify_worker import LossWorker, start_losses


def test_resumed_losses_come_back_as_a_finished_worker(tmp_path):
    plan = plan_run(tmp_path, 1, 0, ["L1"], quick=True)
    saved = {"runs": [], "seconds": 1.5}
    worker = start_losses(plan, {"losses": saved})
    assert isinstance(worker, LossWorker) and worker.process is None
    worker.poll(None)  # nothing to forward
    assert worker.wait(None) is saved


def test_nothing_to_train_is_a_finished_worker_with_an_empty_report(tmp_path):
    plan = plan_run(tmp_path, 1, 0, ["C1"], quick=True)  # no loss check selected
    worker = start_losses(plan, {})
    assert isinstance(worker, LossWorker) and worker.process is None
    assert worker.wait(None) == {"runs": []}
