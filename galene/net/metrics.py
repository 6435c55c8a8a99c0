"""Prometheus text exposition: `Metrics` (a thread-safe registry of counters, gauges and
summaries with labels, served at `/metrics`) and `metrics_text` (one-off samples).

Every Galene process keeps one `Metrics`; servers serve it and `RpcClient` counts its calls in it.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import web

PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def _check_metric_name(name: str) -> None:
    if not _METRIC_NAME.match(name):
        raise ValueError(f"invalid Prometheus metric name: {name!r}")


def _escape_label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _format_labels(labels: Mapping[str, Any]) -> str:
    if not labels:
        return ""
    parts = []
    for key in sorted(labels):
        if not _LABEL_NAME.match(key):
            raise ValueError(f"invalid Prometheus label name: {key!r}")
        parts.append(f'{key}="{_escape_label_value(str(labels[key]))}"')
    return "{" + ",".join(parts) + "}"


def _format_value(value: float) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def metrics_text(
    metrics: Mapping[str, float | int],
    labels: Mapping[str, str] | None = None,
    *,
    types: Mapping[str, str] | None = None,
    help: Mapping[str, str] | None = None,
) -> str:
    """One sample per metric, all with the same `labels`, in Prometheus text format.

    `types` maps a name to "counter" or "gauge" (default gauge); `help` adds # HELP lines.
    """
    label_text = _format_labels(labels or {})
    out: list[str] = []
    for name in sorted(metrics):
        _check_metric_name(name)
        if help and name in help:
            out.append(f"# HELP {name} {help[name]}")
        out.append(f"# TYPE {name} {(types or {}).get(name, 'gauge')}")
        out.append(f"{name}{label_text} {_format_value(metrics[name])}")
    return "\n".join(out) + "\n" if out else ""


class Metrics:
    """A small thread-safe registry of counters and gauges with labels.

    `const_labels` (e.g. role and node) are added to every sample. A name is a counter when
    first used with `inc`, a gauge when first used with `set`/`set_function` and a summary
    (`<name>_count` and `<name>_sum`) when first used with `observe`, unless `describe` said
    otherwise; a counter cannot be `set` or decreased.
    """

    def __init__(self, const_labels: Mapping[str, str] | None = None):
        self.const_labels = dict(const_labels or {})
        _format_labels(self.const_labels)  # validate label names early
        self._kinds: dict[str, str] = {}
        self._help: dict[str, str] = {}
        self._values: dict[str, dict[tuple[tuple[str, str], ...], float | int]] = {}
        self._functions: dict[str, dict[tuple[tuple[str, str], ...], Callable[[], float | int]]] = {}
        self._summaries: dict[str, dict[tuple[tuple[str, str], ...], list[float]]] = {}  # [count, sum]
        self._lock = threading.Lock()

    def _kind(self, name: str, wanted: str) -> str:
        kind = self._kinds.get(name)
        if kind is None:
            _check_metric_name(name)
            self._kinds[name] = kind = wanted
        return kind

    @staticmethod
    def _key(labels: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
        if not labels:  # most counters (several per stream load) have no labels
            return ()
        return tuple(sorted((k, str(v)) for k, v in labels.items()))

    def describe(self, name: str, kind: str, help: str = "") -> None:
        if kind not in ("counter", "gauge", "summary"):
            raise ValueError(f"metric kind must be counter, gauge or summary, not {kind!r}")
        with self._lock:
            _check_metric_name(name)
            existing = self._kinds.get(name)
            if existing is not None and existing != kind:
                raise ValueError(f"metric {name} is already a {existing}")
            self._kinds[name] = kind
            if help:
                self._help[name] = help

    def inc(self, name: str, value: float = 1, **labels: Any) -> None:
        if not labels and value >= 0:
            # The common case (several per stream load): an existing counter without labels.
            series = self._values.get(name)
            if series is not None and self._kinds.get(name) == "counter":
                with self._lock:
                    series[()] = series.get((), 0) + value
                return
        with self._lock:
            kind = self._kind(name, "counter")
            if kind == "summary":
                raise ValueError(f"metric {name} is a summary; use observe")
            if kind == "counter" and value < 0:
                raise ValueError(f"counter {name} cannot decrease")
            series = self._values.setdefault(name, {})
            key = self._key(labels)
            series[key] = series.get(key, 0) + value

    def set(self, name: str, value: float, **labels: Any) -> None:
        with self._lock:
            if self._kind(name, "gauge") != "gauge":
                raise ValueError(f"metric {name} is a counter; use inc")
            self._values.setdefault(name, {})[self._key(labels)] = value

    def set_function(self, name: str, function: Callable[[], float | int], **labels: Any) -> None:
        """A gauge whose value is read from `function` each time the metrics are rendered."""
        with self._lock:
            if self._kind(name, "gauge") != "gauge":
                raise ValueError(f"metric {name} is a counter; use inc")
            self._functions.setdefault(name, {})[self._key(labels)] = function

    def observe(self, name: str, value: float, **labels: Any) -> None:
        """Add one observation to a summary (count and sum, as Prometheus summaries without
        quantiles)."""
        with self._lock:
            if self._kind(name, "summary") != "summary":
                raise ValueError(f"metric {name} is not a summary")
            series = self._summaries.setdefault(name, {}).setdefault(self._key(labels), [0, 0.0])
            series[0] += 1
            series[1] += value

    def observe_ms(self, name: str, milliseconds: float, **labels: Any) -> None:
        """A duration in milliseconds, recorded in the summary `<name>_ms`."""
        self.observe(f"{name}_ms", milliseconds, **labels)

    def summary(self, name: str, **labels: Any) -> tuple[int, float]:
        """(count, sum) of one summary series; (0, 0.0) when nothing was observed."""
        with self._lock:
            count, total = self._summaries.get(name, {}).get(self._key(labels), (0, 0.0))
            return int(count), float(total)

    def value(self, name: str, **labels: Any) -> float | int:
        """The current value of one series (0 when it has never been touched)."""
        key = self._key(labels)
        with self._lock:
            function = self._functions.get(name, {}).get(key)
            if function is None:
                return self._values.get(name, {}).get(key, 0)
        return function()

    def render(self) -> str:
        with self._lock:
            kinds = dict(self._kinds)
            helps = dict(self._help)
            values = {name: dict(series) for name, series in self._values.items()}
            functions = {name: dict(series) for name, series in self._functions.items()}
            summaries = {
                name: {key: tuple(pair) for key, pair in series.items()}
                for name, series in self._summaries.items()
            }
        out: list[str] = []
        for name in sorted(kinds):
            if kinds[name] == "summary":
                out.extend(self._render_summary(name, helps.get(name), summaries.get(name, {})))
                continue
            samples: dict[tuple[tuple[str, str], ...], float | int] = dict(values.get(name, {}))
            for key, function in functions.get(name, {}).items():
                try:
                    samples[key] = function()
                except Exception:  # noqa: BLE001 -- a broken gauge must not take /metrics down
                    samples[key] = math.nan
            if not samples:
                continue
            if name in helps:
                out.append(f"# HELP {name} {helps[name]}")
            out.append(f"# TYPE {name} {kinds[name]}")
            for key in sorted(samples):
                labels = {**self.const_labels, **dict(key)}
                out.append(f"{name}{_format_labels(labels)} {_format_value(samples[key])}")
        return "\n".join(out) + "\n" if out else ""

    def _render_summary(self, name: str, help: str | None, series: Mapping[tuple, tuple]) -> list[str]:
        if not series:
            return []
        out = [f"# HELP {name} {help}"] if help else []
        out.append(f"# TYPE {name} summary")
        for key in sorted(series):
            count, total = series[key]
            labels = _format_labels({**self.const_labels, **dict(key)})
            out.append(f"{name}_count{labels} {_format_value(int(count))}")
            out.append(f"{name}_sum{labels} {_format_value(float(total))}")
        return out

    async def handler(self, request: web.Request) -> web.Response:
        """GET /metrics."""
        return web.Response(body=self.render().encode(), headers={"Content-Type": PROMETHEUS_CONTENT_TYPE})
