"""Per-peer failure detection.

Owns `FailureDetector`: a peer is marked down after `threshold` consecutive failed calls
(timeouts or connection errors) and marked up again by the first call that succeeds. While a
peer is down, routing code skips it and the periodic probe (the FE heartbeat, or a caller using
`down_peers()`) keeps calling it, so a peer that comes back is used again without restarting
anything. Answers from the peer (any HTTP status) count as success: the peer is reachable.

Thread-safe: FE handlers, heartbeats and Spark-side threads may report on the same peer.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass


@dataclass
class _PeerHealth:
    consecutive_failures: int = 0
    alive: bool = True
    last_error: str = ""
    last_success_time: float | None = None  # wall clock (time.time()), for display
    last_failure_time: float | None = None


class FailureDetector:
    """Per-peer health: consecutive failures -> down after `threshold`; a down peer is probed;
    one success marks it up again."""

    def __init__(self, threshold: int = 3):
        if threshold < 1:
            raise ValueError("threshold must be at least 1")
        self.threshold = threshold
        self._peers: dict[str, _PeerHealth] = {}
        self._lock = threading.Lock()

    def record_success(self, peer: str) -> None:
        with self._lock:
            health = self._peers.setdefault(peer, _PeerHealth())
            health.consecutive_failures = 0
            health.alive = True
            health.last_success_time = time.time()

    def record_failure(self, peer: str, reason: str) -> None:
        with self._lock:
            health = self._peers.setdefault(peer, _PeerHealth())
            health.consecutive_failures += 1
            health.last_error = reason
            health.last_failure_time = time.time()
            if health.consecutive_failures >= self.threshold:
                health.alive = False

    def is_down(self, peer: str) -> bool:
        """True once `threshold` consecutive calls failed and no call has succeeded since.
        A peer never seen is not down."""
        with self._lock:
            health = self._peers.get(peer)
            return health is not None and not health.alive

    def status(self, peer: str) -> dict:
        """alive, consecutive_failures, last_error, last_success_time, last_failure_time."""
        with self._lock:
            health = self._peers.get(peer) or _PeerHealth()
            return {
                "alive": health.alive,
                "consecutive_failures": health.consecutive_failures,
                "last_error": health.last_error,
                "last_success_time": health.last_success_time,
                "last_failure_time": health.last_failure_time,
            }

    def down_peers(self) -> list[str]:
        """Peers currently marked down: the ones a prober should call."""
        with self._lock:
            return sorted(peer for peer, health in self._peers.items() if not health.alive)

    def peers(self) -> list[str]:
        with self._lock:
            return sorted(self._peers)

    def forget(self, peer: str) -> None:
        """Drop a peer's history (e.g. a backend that was decommissioned)."""
        with self._lock:
            self._peers.pop(peer, None)
