"""Smith's doubling on torch tensors: the MICo-type fixed points on a CPU or a CUDA device.

``bisimkit.solve(..., backend="torch", device=...)`` ends here for the operators whose
fixed point is a Stein equation ``D = A + c P D P^T`` (:data:`bisimkit.solvers.TORCH_METRICS`:
mico, psm-sampled, dbc-sampled when the policy's next-state laws are point masses, and
mico-reduced through mico). The method is :func:`bisimkit.engine.stein_doubling`'s, step for
step, with torch matrix products; only the arrays live on the device.

Arithmetic: float64 throughout, on a CPU and on CUDA (the Hopper cards' float64 tensor cores
make the products fast enough, and float64 iterates reach 1e-9 without refinement). The
certificate is the one of the numpy path (``docs/operators.md#the-certificate``): one
evaluation ``Y = A + c P D P^T`` at the result, in float64 on the device, its error bounded entry
by entry as :meth:`bisimkit.forms.SteinForm.evaluate` bounds it (A's own error, the two
products' ``gamma(n)`` relative to ``P |D| P^T``, the laws' relative errors), then
:func:`bisimkit.engine.bound_from_norms` with ``||Y - D||``. The product bound holds for sums of n
terms in any order with IEEE float64 fused or unfused multiply-adds, so it covers a GPU's
blocked products too (cuBLAS's default float64 products, on CUDA cores or float64 tensor cores;
not an emulated-float64 math mode); nothing of it is assumed from the numpy run.

Imported only for ``backend="torch"``: torch is the optional ``torch`` extra.
"""

from __future__ import annotations

import time

import numpy as np
import torch  # the optional 'torch' extra: this module is imported only for backend="torch"

from .engine import Solution, _Reporter, bound_from_norms
from .errors import InputError
from .forms import SteinForm, stein_error
from .mdp import FiniteMDP
from .operators import stein_form


def resolve_device(device: str | None) -> torch.device:
    """``device`` as a torch device (default cpu); an InputError naming ``device`` if torch does
    not know it or cannot use it here."""
    if device is None:
        return torch.device("cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise InputError(f"unknown device '{device}' (cpu, cuda or cuda:N)", param="device") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise InputError(f"'{device}': no CUDA device is available to torch here", param="device")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise InputError(f"'{device}': this machine has {torch.cuda.device_count()} CUDA device(s)", param="device")
    elif dev.type != "cpu":
        raise InputError(f"unsupported device '{device}' (cpu, cuda or cuda:N)", param="device")
    return dev


#: n x n float64 arrays alive at once on the device at the peak of the doubling: A, P, D, M and
#: two products (the certificate's evaluation needs fewer).
DEVICE_ARRAYS = 6


def check_device_memory(n: int, device: torch.device, free: int | None = None) -> None:
    """An InputError naming ``device`` when the doubling's arrays cannot fit in its free memory (CUDA only;
    ``free`` overrides the free bytes the device reports)."""
    if device.type != "cuda" and free is None:
        return
    if free is None:
        free, _ = torch.cuda.mem_get_info(device)
    need = DEVICE_ARRAYS * 8 * n * n
    if need > free:
        raise InputError(
            f"n = {n} needs about {need / 2**30:.1f} GiB on {device} ({DEVICE_ARRAYS} n x n float64 "
            f"arrays), {free / 2**30:.1f} GiB are free there",
            param="device",
        )


def fixed_point_torch(mdp: FiniteMDP, metric: str, tol: float, device: str | None = None, progress=None) -> Solution:
    """The fixed point of the Stein-form operator ``metric`` on ``mdp``, certified, computed with torch
    on ``device``. Arguments are checked by :func:`bisimkit.solvers.solve`."""
    start = time.perf_counter()
    dev = resolve_device(device)
    check_device_memory(mdp.n_states, dev)
    form = stein_form(mdp, metric)
    report = _Reporter(progress, start)
    D, its, err, floor = stein_doubling_torch(form, tol, dev, report)
    return Solution(
        metric=metric,
        distances=D,
        iterations=its,
        certified_error=float(err),
        seconds=time.perf_counter() - start,
        method=f"Smith doubling (Stein equation), torch float64 on {dev}",
        tolerance=tol,
        converged=bool(err <= tol),
        history=report.history,
        history_seconds=report.seconds,
        floor=float(floor),
    )


def stein_doubling_torch(
    form: SteinForm, tol: float, device: torch.device, report=None
) -> tuple[np.ndarray, int, float, float]:
    """:func:`bisimkit.engine.stein_doubling` with torch products on ``device``.

    Returns ``(D, steps, certified_error, floor)`` with ``D`` a numpy array (negative round-off
    clipped to 0 after the certificate, which only moves D closer to the non-negative fixed point).
    """
    c = float(form.discount)
    n = form.A.shape[0]
    A = torch.as_tensor(np.ascontiguousarray(form.A, dtype=np.float64)).to(device)
    P = torch.as_tensor(np.ascontiguousarray(form.P, dtype=np.float64)).to(device)
    a_max = float(A.abs().max()) if n else 0.0
    scale = a_max / (1.0 - c)
    D, M, coef, k = A.clone(), P.clone(), c, 0
    err = coef * scale
    while err > tol:
        closed = _rank_one_tail(A, M, coef, c, a_max, tol)
        if closed is not None:
            D += closed[0]
            err = closed[1]
            k += 1
            if report:
                report(k, err)
            break
        step = torch.matmul(M, D)
        step = torch.matmul(step, M.T)
        D.add_(step, alpha=coef)
        del step
        k += 1
        coef = coef * coef
        err = coef * scale
        if err > tol:
            M = torch.matmul(M, M)
        if report:
            report(k, err)
    del M
    D = (D + D.T) / 2
    b = _certificate(form, A, P, D, c)
    if report:
        report(k, b.error)
    out = D.clamp_(min=0.0).cpu().numpy()
    return out, k, b.error, b.floor


def _certificate(form: SteinForm, A: torch.Tensor, P: torch.Tensor, D: torch.Tensor, c: float, chunk: int = 4096):
    """The bound of ``D`` itself (``returned="at"``) from one float64 evaluation ``Y = A + c P D P^T``, its
    error bounded entry by entry by :func:`bisimkit.operators.stein_error` on the device."""
    n = A.shape[0]
    if n == 0:
        return bound_from_norms(c, 0.0, 0.0, returned="at")
    Y = torch.matmul(torch.matmul(P, D), P.T)  # the order of SteinForm.apply: A + c * ((P @ D) @ P^T)
    size = torch.matmul(torch.matmul(P, D.abs()), P.T) if float(D.min()) < 0 else Y.clone()
    Y.mul_(c).add_(A)
    step = max(float((Y[lo : lo + chunk] - D[lo : lo + chunk]).abs().max()) for lo in range(0, n, chunk))

    def tensor(x):
        return torch.as_tensor(np.asarray(x, dtype=np.float64)).to(A.device) if isinstance(x, np.ndarray) else x

    assert form.A_error is not None  # the registry's Stein forms carry the error of A
    # the device copy holds torch tensors, which stein_error reads as it does numpy arrays
    a_error = tuple(tensor(x) for x in form.A_error)
    on_device = SteinForm(A, P, c, A_error=a_error, P_relative=tensor(form.P_relative))  # type: ignore[arg-type]
    error = stein_error(on_device, Y, size)
    del Y, size
    return bound_from_norms(c, step, error, returned="at")


def _rank_one_tail(
    A: torch.Tensor, M: torch.Tensor, coef: float, c: float, a_max: float, tol: float
) -> tuple[float, float] | None:
    """:func:`bisimkit.engine._rank_one_tail` on the device: the Neumann tail closed as one constant
    once ``M = P^N`` has nearly equal rows (the same bound, see there)."""
    mu = M.mean(dim=0)
    eps = float((M - mu).abs_().sum(dim=1).max())
    bound = coef / (1.0 - c) * (2.0 * eps + eps * eps) * a_max
    if bound > tol:
        return None
    return float(mu @ A @ mu) * coef / (1.0 - c), bound
