"""Process-wide settings of Galene's server processes (FE/BE and the BE's ingest worker).

- `keep_freed_heap`: glibc keeps freed memory for reuse instead of unmapping and faulting
  it in again for every block of a big load (see there).
- `disable_pyarrow_signal_handlers`: pyarrow installs and restores SIGINT handlers around
  every read it does on a process's main thread (so Ctrl-C can interrupt it): ~50 µs per CSV
  parse, which thousands of small loads a second pay. Galene's servers handle their signals
  themselves.
- `settle_heap`: after start-up, everything allocated so far (modules, Spark's py4j objects,
  the recovered catalog) lives as long as the process; it is kept out of the cyclic GC's
  full collections (whose pauses otherwise grow with it and stall every in-flight request),
  and the gen-0 threshold is raised: a small load allocates a few dozen short-lived
  containers, and with the default (700) the collector ran hundreds of times a second
  (~5% of the BE's CPU). Most of those objects are freed by refcount before a larger
  threshold is reached, so collections get rarer, not longer.
"""

from __future__ import annotations

import gc


def disable_pyarrow_signal_handlers() -> None:
    import pyarrow

    pyarrow.enable_signal_handlers(False)


def settle_heap() -> None:
    gc.collect()
    gc.freeze()
    gc.set_threshold(20000, 20, 20)


# glibc's M_TOP_PAD: how much freed memory the heap keeps instead of returning it to the OS.
KEEP_FREED_HEAP_BYTES = 256 << 20
_M_TOP_PAD = -2


def keep_freed_heap(nbytes: int = KEEP_FREED_HEAP_BYTES) -> bool:
    """Let glibc keep up to `nbytes` of freed heap memory for reuse (M_TOP_PAD).

    A big stream load cycles through ~100 MB of short-lived buffers per 32 MB block (the
    block, its parsed columns, the per-tablet copies, Parquet pages). With glibc's default
    the heap gives that memory back after each block and takes it again for the next:
    measured, page faults and the kernel zeroing those pages were a fifth of the BE's CPU
    during a 1.5 GB load, and the load took 6.5-7 s instead of 5.3-5.5 s. The cost is up to
    `nbytes` of RSS held while idle. Returns False where mallopt is not available."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    return bool(mallopt(_M_TOP_PAD, nbytes))
