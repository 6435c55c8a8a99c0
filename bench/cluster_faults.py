"""Bench: how fast a fault is seen and healed, per fault shape, with a steady load running.

One `galene fe` and three `galene be`; as root (and with `iptables`) each in a network namespace
of its own (`tests/support/netlab.py`), else on loopback with the shapes that need no network fault.
A background load (`--clients` closed loops of 1-row async group-commit loads through the
FE's 307, so they go to the table's owner) runs throughout, and a prober sends one load straight to the victim BE every 0.25 s (plain and async
group commit in turn, `timeout: 10`). For each shape, injected on the table's current owner (or, for BE→BE, on another BE):

* seconds from injection to the first failed call of the prober (the caller's error, which
  should come within its deadline, ≤ 10 s);
* seconds to `Writable=false` (or `Alive=false`) in SHOW BACKENDS, for the shapes that break
  the BE's write path; the bound is 2 × `be_canary_interval_second` + `be_canary_timeout_second`;
* seconds from the fault's removal until the BE is writable again (target ≤ 5 s);
* background loads/s before, during and after.

Shapes: ingest worker SIGSTOP, BE process SIGSTOP (the kernel accepts, nothing answers),
storage writes parked (debug point), and with namespaces: FE→BE black hole (iptables DROP),
FE→BE refused (REJECT with resets), FE↔BE partition, BE→BE black hole (only the hop to one
peer: forwards fall back to loading locally, the BE stays writable by design), slow link (tbf
64 kbit/s). Last line: `RATIO cluster_fault_detect <worst seconds to Writable=false ÷ bound>`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import httpx
from cluster_forward import redirected_load
from common import auth_header
from streamload_small import AUTH, PhaseResult

from tests.support.cluster import GaleneCluster
from tests.support.netlab import NetLab, have_iptables, unavailable_reason

DB = "bench_faults"
LOAD_TIMEOUT_S = 8  # the `timeout` header of every load (the BE's own deadline)
CLIENT_TIMEOUT_S = 10  # the caller's deadline: a BE that answers nothing is bounded by this


class Background:
    """Closed loops of 1-row loads through the FE; records when each finished and how."""

    def __init__(self, c: GaleneCluster, clients: int):
        self.c, self.clients = c, clients
        self.done: list[tuple[float, bool]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    async def _run(self) -> None:
        fe = self.c.fe
        url = f"http://{fe.host}:{fe.http_port}/api/{DB}/t/_stream_load"
        headers = {
            **AUTH,
            "column_separator": ",",
            "Expect": "100-continue",
            "group_commit": "async_mode",
            "timeout": str(LOAD_TIMEOUT_S),
        }
        timeout = aiohttp.ClientTimeout(total=CLIENT_TIMEOUT_S)
        async with aiohttp.ClientSession(timeout=timeout) as session:

            async def client(i: int) -> None:
                n = i
                while not self._stop.is_set():
                    res = PhaseResult("bg")
                    await redirected_load(session, url, f"{n},bg\n".encode(), headers, res)
                    self.done.append((time.monotonic(), res.ok == 1))
                    if not res.ok:
                        await asyncio.sleep(0.05)
                    n += self.clients

            await asyncio.gather(*(client(i) for i in range(self.clients)))

    def start(self) -> Background:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)

    def rate(self, t0: float, t1: float) -> float:
        if t1 <= t0:
            return float("nan")
        return sum(1 for t, ok in list(self.done) if ok and t0 <= t < t1) / (t1 - t0)


class Prober:
    """One load straight to the victim every 0.25 s (plain and async group commit in turn, or
    the forward path to another BE), each under the caller's deadline."""

    def __init__(self, url: str, alternate: bool = True):
        self.url, self.alternate = url, alternate
        self.calls: list[tuple[float, float, bool, str]] = []  # sent, returned, ok, message
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def _one(self, n: int) -> None:
        h = {**auth_header(), "column_separator": ",", "timeout": str(LOAD_TIMEOUT_S)}
        if n % 2 or not self.alternate:
            h["group_commit"] = "async_mode"
        sent = time.monotonic()
        try:
            r = httpx.put(
                self.url, content=f"{10_000_000 + n},probe\n".encode(), headers=h, timeout=CLIENT_TIMEOUT_S
            )
            reply = r.json()
            ok, msg = reply.get("Status") == "Success", str(reply.get("Message") or reply.get("msg"))
        except Exception as e:  # noqa: BLE001 - the caller's failure, recorded
            ok, msg = False, f"{type(e).__name__}: {e}"
        self.calls.append((sent, time.monotonic(), ok, msg))

    def _loop(self) -> None:
        n = 0
        while not self._stop.is_set():
            t = threading.Thread(target=self._one, args=(n,), daemon=True)
            t.start()
            self._threads.append(t)
            n += 1
            self._stop.wait(0.25)

    def start(self) -> Prober:
        threading.Thread(target=self._loop, daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(CLIENT_TIMEOUT_S + 5)

    def first_failure_after(self, t0: float) -> tuple[float, str] | None:
        fails = sorted((ret, msg) for _, ret, ok, msg in list(self.calls) if not ok and ret >= t0)
        return (fails[0][0] - t0, fails[0][1]) if fails else None


@dataclass
class Shape:
    name: str
    inject: object  # (victim BE, the table's owner BE) -> None
    remove: object  # () -> None
    breaks_writes: bool = True  # expected to make the victim Writable=false / Alive=false
    needs_net: bool = False
    victim: str = "owner"  # the table's group-commit owner, or "other": a BE that forwards to it
    result: dict = field(default_factory=dict)


def owner_of(c: GaleneCluster):
    """The table's group-commit owner (the FE's choice, through a direct 307)."""
    r = c.redirect(DB, "t", {"group_commit": "async_mode", "redirect-policy": "direct"})
    at = r.headers["location"].split("@", 1)[1].split("/", 1)[0]
    return next(b for b in c.bes if f"{b.host}:{b.be_http_port}" == at)


def _row(c: GaleneCluster, be) -> dict:
    return c.backend(be) or {}


def _wait(pred, timeout: float, poll: float = 0.1) -> float | None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pred():
            return time.monotonic() - t0
        time.sleep(poll)
    return None


def run_shape(shape: Shape, c: GaleneCluster, bg: Background, args, bound: float) -> dict:
    def healthy() -> bool:
        return all(r["Writable"] == "true" and r["Alive"] == "true" for r in c.backends())

    _wait(healthy, 60)
    time.sleep(args.settle)
    owner = owner_of(c)
    victim = owner if shape.victim == "owner" else next(b for b in c.bes if b is not owner)
    base = f"http://{victim.host}:{victim.be_http_port}/api/{DB}/t"
    if shape.victim == "owner":
        prober = Prober(f"{base}/_stream_load").start()
    else:  # the forward path to the owner, as a load balancer would send it
        prober = Prober(
            f"{base}/_stream_load_forward?forward_to={owner.host}:{owner.be_http_port}", alternate=False
        ).start()

    def out_of_routing() -> bool:
        r = _row(c, victim)
        return r.get("Writable") == "false" or r.get("Alive") == "false"

    time.sleep(1.0)
    t_inject = time.monotonic()
    shape.inject(victim, owner)
    unwritable = _wait(out_of_routing, max(args.hold, bound + 10) if shape.breaks_writes else args.hold)
    _wait(lambda: prober.first_failure_after(t_inject) is not None, CLIENT_TIMEOUT_S + 1)
    left = args.hold - (time.monotonic() - t_inject)
    if left > 0:
        time.sleep(left)
    t_remove = time.monotonic()
    shape.remove()
    healed = _wait(healthy, 60)
    t_healed = time.monotonic()
    time.sleep(args.settle)
    prober.stop()
    failure = prober.first_failure_after(t_inject)
    res = {
        "victim": f"{victim.host}:{victim.be_http_port}",
        "first_failed_call_s": failure[0] if failure else None,
        "first_failure": failure[1] if failure else "",
        "unwritable_s": unwritable,
        "healed_s": healed,
        "before": bg.rate(t_inject - args.settle, t_inject),
        "during": bg.rate(t_inject, t_remove),
        "after": bg.rate(t_healed, t_healed + args.settle),
    }

    def s(v):
        return "none" if v is None else f"{v:.1f} s"

    print(
        f"SHAPE {shape.name} ({shape.victim} {res['victim']}): first failed call {s(res['first_failed_call_s'])}"
        + (f" ({res['first_failure'][:120]})" if failure else "")
        + f", Writable=false after {s(unwritable)}"
        + ("" if shape.breaks_writes else " (stays writable by design)")
        + f", writable again {s(healed)} after removal; background loads/s before {res['before']:.1f}, "
        f"during {res['during']:.1f}, after {res['after']:.1f}",
        flush=True,
    )
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hold", type=float, default=20.0, help="seconds each fault stays in place (at least)")
    ap.add_argument("--settle", type=float, default=5.0, help="seconds of steady load before and after")
    ap.add_argument("--clients", type=int, default=8, help="closed loops of the background load")
    ap.add_argument("--canary-interval", type=int, default=5)
    ap.add_argument("--canary-timeout", type=int, default=5)
    ap.add_argument("--shapes", default="", help="comma-separated subset of the shapes to run")
    ap.add_argument("--engine", default="sail")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    bound = 2 * args.canary_interval + args.canary_timeout

    work = Path(tempfile.mkdtemp(prefix="galene-bench-faults-"))
    why_not = unavailable_reason() or (None if have_iptables() else "iptables is not installed")
    net = None if why_not else NetLab()
    c = bg = None
    try:
        placement = None
        if net is not None:
            net.create()
            placement = [net.add_node(n) for n in ("fe", "be0", "be1", "be2")]
        else:
            print(f"NOTE no network namespaces ({why_not}): only the process shapes run")
        c = GaleneCluster(
            work,
            n_backends=3,
            fe_conf={
                "be_canary_interval_second": str(args.canary_interval),
                "be_canary_timeout_second": str(args.canary_timeout),
            },
            be_conf={
                "be_canary_timeout_second": str(args.canary_timeout),
                "enable_debug_points": "true",
                "be_forward_connect_timeout_second": "3",
                "be_forward_timeout_second": "10",
            },
            engine=args.engine,
            placement=placement,
        ).start()
        c.fe.query(f"CREATE DATABASE {DB}")
        c.fe.query(
            f"CREATE TABLE {DB}.t (id BIGINT, v VARCHAR(16)) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) "
            'BUCKETS 2 PROPERTIES ("group_commit_interval_ms" = "1000")'
        )
        c.wait_backends(
            lambda rows: all(r["Writable"] == "true" and r["LastCanaryTime"] != "N/A" for r in rows)
        )
        state: dict = {}

        def debug_point(be, action: str) -> None:
            httpx.post(
                f"http://{be.host}:{be.be_http_port}/api/debug_point/{action}/stream_load.storage_write",
                params={"timeout": "600"} if action == "add" else {},
                headers=auth_header(),
                timeout=10,
            ).raise_for_status()

        def stop(pid: int) -> None:
            state["stopped"] = pid
            os.kill(pid, signal.SIGSTOP)

        def cont() -> None:
            if "stopped" in state:
                os.kill(state.pop("stopped"), signal.SIGCONT)

        def park(be) -> None:
            state["parked"] = be
            debug_point(be, "add")

        def unpark() -> None:
            if "parked" in state:
                debug_point(state.pop("parked"), "remove")

        def name(be) -> str:
            return f"be{c.bes.index(be)}"

        heal = net.heal if net is not None else (lambda: None)
        shapes = [
            Shape("ingest_worker_sigstop", lambda v, o: stop(c.ingest_worker_pid(v)), cont),
            Shape("be_process_sigstop", lambda v, o: stop(v.proc.pid), cont),
            Shape("storage_writes_parked", lambda v, o: park(v), unpark),
            Shape("fe_to_be_black_hole", lambda v, o: net.drop("fe", name(v)), heal, needs_net=True),
            Shape("fe_to_be_refused", lambda v, o: net.reject("fe", name(v)), heal, needs_net=True),
            Shape(
                "fe_be_partition",
                lambda v, o: (net.drop("fe", name(v)), net.drop(name(v), "fe")),
                heal,
                needs_net=True,
            ),
            Shape(
                "be_to_be_black_hole",
                lambda v, o: net.drop(name(v), name(o)),
                heal,
                breaks_writes=False,
                needs_net=True,
                victim="other",
            ),
            Shape(
                "slow_link_64kbit",
                lambda v, o: net.slow(name(v), "64kbit"),
                heal,
                breaks_writes=False,
                needs_net=True,
            ),
        ]
        wanted = {s.strip() for s in args.shapes.split(",") if s.strip()}
        shapes = [
            s for s in shapes if (not wanted or s.name in wanted) and (net is not None or not s.needs_net)
        ]
        print(
            f"bound 2 x {args.canary_interval} + {args.canary_timeout} = {bound} s; hold {args.hold:g} s; "
            f"{args.clients} background clients; shapes: {', '.join(s.name for s in shapes)}",
            flush=True,
        )
        bg = Background(c, args.clients).start()
        for shape in shapes:
            try:
                shape.result = run_shape(shape, c, bg, args, bound)
            finally:
                try:
                    shape.remove()
                except Exception:  # noqa: BLE001, S110 - removed already
                    pass
        bg.stop()
        bg = None
        detect = [s.result["unwritable_s"] for s in shapes if s.breaks_writes and s.result]
        worst = max((d if d is not None else float("inf")) for d in detect) if detect else float("nan")
        firsts = [
            s.result["first_failed_call_s"] for s in shapes if s.result.get("first_failed_call_s") is not None
        ]
        heals = [s.result["healed_s"] for s in shapes if s.result.get("healed_s") is not None]
        print(
            f"worst first failed call: {max(firsts):.1f} s (loads' timeout {LOAD_TIMEOUT_S} s, the caller's {CLIENT_TIMEOUT_S} s)"
            if firsts
            else "no failed call"
        )
        print(f"worst healing: {max(heals):.1f} s (target 5 s)" if heals else "no healing measured")
        print(f"worst Writable=false: {worst:.1f} s (bound {bound} s)")
        print(f"RATIO cluster_fault_detect {worst / bound:.3f}")
    finally:
        if bg is not None:
            bg.stop()
        if c is not None:
            c.stop()
        if net is not None:
            net.destroy()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
