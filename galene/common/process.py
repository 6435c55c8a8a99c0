"""Process-wide settings of Galene's server processes (FE/BE and the BE's ingest worker).

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
