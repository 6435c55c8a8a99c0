"""How `make test` spreads the suite over pytest-xdist workers, and what each module cost.

* Each test file runs whole on one worker (its module-scoped nodes start once, its tests keep
  their order): xdist's LoadScope with the file as the scope.
* The longest files start first and a worker takes its next file only when it is about to run
  the last test of the one it has (xdist's LoadScope queues a second file behind a running one,
  so a long file could wait behind another while a worker idles): a longest-first greedy
  schedule, whose critical path is the longest file rather than an unlucky queue.
* How long a file takes: what it took in the last run here (pytest's cache,
  `galene/module-seconds`), else what it took in a run recorded with the repository
  (module_seconds.json: a fresh clone has no cache, and CI runs from one), else a guess from
  its directory.

`--module-times` prints, at the end of a run, each file's wall time, its worker and its span,
and each worker's finish time (the critical path).
"""

from __future__ import annotations

import functools
import json
from collections import defaultdict
from pathlib import Path

import pytest

CACHE_KEY = "galene/module-seconds"

_DEFAULT_S = {"tests/unit/": 2.0, "tests/integration/": 40.0, "tests/e2e/": 40.0}


def _scope(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


RECORDED = Path(__file__).with_name("module_seconds.json")


@functools.cache
def recorded_seconds() -> dict[str, float]:
    """Each file's seconds in the run recorded with the repository (refresh it from a full run:
    `--module-times-file F`, then `python -m tests.support.schedule F`)."""
    try:
        return {k: float(v) for k, v in json.loads(RECORDED.read_text()).items()}
    except (OSError, ValueError):
        return {}


def estimate(path: str, cached: dict[str, float]) -> float:
    if path in cached:
        return float(cached[path])
    recorded = recorded_seconds()
    if path in recorded:
        return recorded[path]
    return next((s for prefix, s in _DEFAULT_S.items() if path.startswith(prefix)), 10.0)


def make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    cache = getattr(config, "cache", None)  # None under -p no:cacheprovider
    cached = cache.get(CACHE_KEY, {}) if cache is not None else {}

    class FileScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _scope(nodeid)

        def _assign_work_unit(self, node) -> None:
            # The longest file still queued goes first.
            longest = max(self.workqueue, key=lambda scope: estimate(scope, cached))
            self.workqueue.move_to_end(longest, last=False)
            super()._assign_work_unit(node)

        def _reschedule(self, node) -> None:
            # Only a worker holding nothing but its file's last test takes the next file (xdist
            # takes one at 2 pending tests). The worker waits for its next test before it runs
            # the last one (it needs it to know whether to tear the module down), so 1 is the least.
            if node.shutting_down:
                return
            if self.workqueue and self._pending_of(self.assigned_work[node]) > 1:
                return
            super()._reschedule(node)

    return FileScheduling(config, log)


class ModuleTimes:
    """On the controller: each file's wall span and its worker, from the test reports (their
    start/stop); kept in pytest's cache for the next run's order, printed with --module-times."""

    def __init__(self, config):
        self.config = config
        self.spans: dict[str, list] = defaultdict(lambda: [float("inf"), 0.0, 0.0, "", 0])
        self.outcomes_ok: dict[str, bool] = defaultdict(lambda: True)

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report) -> None:
        span = self.spans[_scope(report.nodeid)]
        span[0] = min(span[0], report.start)
        span[1] = max(span[1], report.stop)
        span[2] += report.duration
        node = getattr(report, "node", None)
        span[3] = getattr(getattr(node, "gateway", None), "id", "main")
        if report.when == "call":
            span[4] += 1

    @pytest.hookimpl
    def pytest_sessionfinish(self, session) -> None:
        if getattr(self.config, "cache", None) is None or not self.spans:
            return
        known = dict(self.config.cache.get(CACHE_KEY, {}))
        # A run cut short (-x, a keyboard interrupt) or a selection of tests (::, -k, -m) would
        # make files look fast: only whole files count. (Under xdist the controller collects
        # no items of its own, so this is judged on the run, not by counting each file's tests.)
        opt = self.config.option
        partial = any("::" in a for a in self.config.args) or opt.keyword or opt.markexpr
        if session.shouldstop or session.shouldfail or opt.maxfail or partial:
            return
        for path, (start, stop, _busy, _worker, ran) in self.spans.items():
            if ran:
                known[path] = round(stop - start, 1)
        self.config.cache.set(CACHE_KEY, known)

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.config.getoption("module_times") or not self.spans:
            return
        t0 = min(s[0] for s in self.spans.values())
        tr = terminalreporter
        tr.section("module wall times (longest first)")
        for path, (start, stop, busy, worker, ran) in sorted(self.spans.items(), key=lambda kv: kv[1][0] - kv[1][1]):
            if stop - start >= 1:
                tr.write_line(f"{stop - start:8.1f}s {worker:>5} [{start - t0:7.1f} .. {stop - t0:7.1f}] {ran:4d} tests  {path}")
        ends: dict[str, float] = defaultdict(float)
        for start, stop, _busy, worker, _ran in self.spans.values():
            ends[worker] = max(ends[worker], stop - t0)
        tr.write_line("workers finish: " + ", ".join(f"{w} {e:.1f}s" for w, e in sorted(ends.items())))
        path = self.config.getoption("module_times_file")
        if path:
            out = {p: {"start": s - t0, "stop": e - t0, "worker": w, "tests": n} for p, (s, e, _b, w, n) in self.spans.items()}
            Path(path).write_text(json.dumps(out, indent=1, sort_keys=True))


def main(argv: list[str]) -> int:
    """Write module_seconds.json from a `--module-times-file` of a full run."""
    spans = json.loads(Path(argv[1]).read_text())
    seconds = {p: round(v["stop"] - v["start"], 1) for p, v in sorted(spans.items())}
    RECORDED.write_text(json.dumps(seconds, indent=1, sort_keys=True) + "\n")
    print(f"{len(seconds)} files, {sum(seconds.values()):.0f} s in all -> {RECORDED}")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv))
