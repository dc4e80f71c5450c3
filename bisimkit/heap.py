"""Large solves and glibc's allocator: freed blocks kept for the next round.

A round of coupling iteration on millions of pairs allocates arrays of tens to hundreds of megabytes (the
pair vectors, the transport values and their bounds, the pair system), frees them, and allocates them
again in the next round. glibc's ``malloc`` maps every block above its mmap threshold afresh and unmaps it
when it is freed; its own adjustment raises that threshold to at most 32 MiB on 64-bit machines, so every
larger block is new memory each round, and its first touch costs one page fault per page (on brp with
8,712 blocks, 38 million pairs, a third of the solve's time was spent in the kernel).

:func:`large_solve` raises the threshold to :data:`HEAP_BLOCKS_UP_TO` for the duration of a solve of at least
:data:`LARGE_PAIRS` pairs, so its large blocks come from the heap, where a freed block is reused by the
next allocation of its size (the trim threshold is raised to the same size, so the heap's top is not handed
back between rounds); on leaving, it sets the threshold to 32 MiB and the trim threshold to 64 MiB
(where glibc's own adjustment takes them once large blocks have been freed) and hands the free part of
the heap back to the system (``malloc_trim``). The peak resident size is that of the live arrays plus what
the heap cannot coalesce; ``docs/performance.md#relations-of-model-checking-chains`` has the measured peak.

Nothing changes where the user has chosen glibc's settings (any ``MALLOC_*_`` variable, or a ``glibc.malloc``
tunable in ``GLIBC_TUNABLES``), where the C library is not glibc, or inside a solve that already raised it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading
from collections.abc import Iterator

#: A solve of at least this many pairs keeps its freed blocks: its pair vectors (8 bytes a pair) are then
#: above glibc's largest own threshold, 32 MiB.
LARGE_PAIRS = 4 * 2**20
#: During a large solve, blocks up to this size come from the heap.
HEAP_BLOCKS_UP_TO = 2**30
#: What the thresholds are set to after a large solve: glibc's own largest mmap threshold on 64-bit
#: machines, and twice it for the trim threshold, as its adjustment sets them.
MMAP_THRESHOLD_AFTER = 32 * 2**20
TRIM_THRESHOLD_AFTER = 2 * MMAP_THRESHOLD_AFTER

_M_TRIM_THRESHOLD = -1  # mallopt's parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3
_lock = threading.Lock()
_depth = 0
_UNSEEN = object()
_libc: object = _UNSEEN  # glibc's CDLL, or None; not looked up yet while _UNSEEN


def _glibc() -> ctypes.CDLL | None:
    """glibc, where this process runs on it and the user has not set its allocator's options."""
    global _libc
    if _libc is _UNSEEN:
        _libc = None
        user_set = any(key.startswith("MALLOC_") for key in os.environ) or "glibc.malloc" in os.environ.get(
            "GLIBC_TUNABLES", ""
        )
        if sys.platform.startswith("linux") and not user_set:
            try:
                libc = ctypes.CDLL("libc.so.6")
                libc.gnu_get_libc_version.restype = ctypes.c_char_p
                libc.gnu_get_libc_version()  # only glibc has it
                _libc = libc
            except (OSError, AttributeError):
                _libc = None
    return _libc if isinstance(_libc, ctypes.CDLL) else None


@contextlib.contextmanager
def large_solve(pairs: int) -> Iterator[None]:
    """Within this block, a solve of ``pairs`` pairs (module doc): freed blocks up to
    :data:`HEAP_BLOCKS_UP_TO` kept for reuse when ``pairs >= LARGE_PAIRS``; nothing changes otherwise."""
    global _depth
    libc = _glibc() if pairs >= LARGE_PAIRS else None
    if libc is None:
        yield
        return
    with _lock:
        _depth += 1
        if _depth == 1:
            libc.mallopt(_M_MMAP_THRESHOLD, HEAP_BLOCKS_UP_TO)
            libc.mallopt(_M_TRIM_THRESHOLD, HEAP_BLOCKS_UP_TO)
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_AFTER)
                libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_AFTER)
                libc.malloc_trim(0)


def raised() -> bool:
    """Whether a large solve holds the raised thresholds now."""
    return _depth > 0
