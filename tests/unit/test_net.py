"""Network discipline: deadlines, connection eviction, socket tuning, failure detection,
task dump and metrics. Real sockets on 127.0.0.1 only."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from galene.net import inflight
from galene.net.client import TOKEN_HEADER, RpcClient, RpcUnavailable, TunedConnector, tune_socket
from galene.net.deadline import DeadlineExceeded, SharedDeadlines, with_deadline
from galene.net.failure import FailureDetector
from galene.net.inflight import install_task_ages
from galene.net.metrics import PROMETHEUS_CONTENT_TYPE, Metrics, metrics_text
from galene.net.server import make_server_socket
from galene.net.tasks_dump import tasks_dump_handler, tasks_dump_text
from tests.support.netlab import loopback_namespace, loopback_unavailable_reason

REPO_ROOT = Path(__file__).resolve().parents[2]


def run(coro):
    # A guard, not an assertion: if deadlines were broken a test fails here instead of hanging.
    return asyncio.run(asyncio.wait_for(coro, 60))


class RecordingServer:
    """A small aiohttp server that records the client port of every request it sees."""

    def __init__(self) -> None:
        self.client_ports: list[int] = []
        self.seen_tokens: list[str | None] = []
        self.release = asyncio.Event()  # handlers that "hang" wait on this until teardown
        self.runner: web.AppRunner | None = None
        self.port = 0

    def _note(self, request: web.Request) -> None:
        self.client_ports.append(request.transport.get_extra_info("peername")[1])
        self.seen_tokens.append(request.headers.get(TOKEN_HEADER))

    async def echo(self, request: web.Request) -> web.Response:
        self._note(request)
        payload = await request.json() if request.can_read_body else None
        return web.json_response({"echo": payload, "query": dict(request.query)})

    async def hang(self, request: web.Request) -> web.Response:
        self._note(request)
        await self.release.wait()
        return web.json_response({"late": True})

    async def hang_mid_body(self, request: web.Request) -> web.StreamResponse:
        self._note(request)
        response = web.StreamResponse()
        response.content_length = 1000
        await response.prepare(request)
        await response.write(b"x" * 10)
        await self.release.wait()
        return response

    async def count_bytes(self, request: web.Request) -> web.Response:
        self._note(request)
        body = await request.read()
        return web.Response(body=b"got %d" % len(body), headers={"X-Count": str(len(body))})

    async def not_found(self, request: web.Request) -> web.Response:
        self._note(request)
        return web.json_response({"msg": "no such thing"}, status=404)

    async def server_socket_options(self, request: web.Request) -> web.Response:
        sock = request.transport.get_extra_info("socket")
        return web.json_response(
            {
                "user_timeout": sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT),
                "keepalive": sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
            }
        )

    async def start(self, port: int = 0) -> RecordingServer:
        app = web.Application()
        app.router.add_post("/echo", self.echo)
        app.router.add_get("/echo", self.echo)
        app.router.add_get("/hang", self.hang)
        app.router.add_get("/hang_mid_body", self.hang_mid_body)
        app.router.add_put("/bytes", self.count_bytes)
        app.router.add_get("/missing", self.not_found)
        app.router.add_get("/sockopts", self.server_socket_options)
        app.router.add_get("/api/_tasks", tasks_dump_handler)
        self.runner = web.AppRunner(app, shutdown_timeout=1.0)
        await self.runner.setup()
        sock = make_server_socket("127.0.0.1", port, user_timeout_ms=4321, keepalive_idle_s=7)
        self.port = sock.getsockname()[1]
        await web.SockSite(self.runner, sock).start()
        return self

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def stop(self) -> None:
        self.release.set()
        if self.runner is not None:
            await self.runner.cleanup()


@contextlib.asynccontextmanager
async def serving(port: int = 0):
    server = await RecordingServer().start(port)
    try:
        yield server
    finally:
        await server.stop()


@contextlib.asynccontextmanager
async def rpc_client(**kwargs):
    client = RpcClient(**kwargs)
    try:
        yield client
    finally:
        await client.close()


def unused_port() -> int:
    """A port nothing listens on (bound, then released)."""
    sock = make_server_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    sock.close()
    return port


# --- calls --------------------------------------------------------------------------------------


def test_call_json_round_trip_with_token():
    async def scenario():
        async with serving() as server, rpc_client(token="s3cret") as client:
            status, body = await client.call_json(
                "POST", server.url("/echo"), json={"a": [1, 2], "b": "x"}, params={"q": "1"}
            )
            assert status == 200
            assert body == {"echo": {"a": [1, 2], "b": "x"}, "query": {"q": "1"}}
            assert server.seen_tokens == ["s3cret"]

    run(scenario())


def test_no_token_header_without_token_and_http_errors_are_answers():
    async def scenario():
        async with serving() as server, rpc_client() as client:
            status, body = await client.call_json("GET", server.url("/missing"))
            assert status == 404
            assert body == {"msg": "no such thing"}
            assert server.seen_tokens == [None]

    run(scenario())


def test_call_streams_an_async_iterable_body():
    async def chunks():
        for _ in range(10):
            yield b"y" * 1000

    async def scenario():
        async with serving() as server, rpc_client() as client:
            status, headers, body = await client.call("PUT", server.url("/bytes"), data=chunks())
            assert (status, body) == (200, b"got 10000")
            assert headers["X-Count"] == "10000"

    run(scenario())


def test_handler_that_never_answers_raises_deadline_exceeded():
    async def scenario():
        async with serving() as server, rpc_client() as client:
            with pytest.raises(DeadlineExceeded) as caught:
                await client.call_json("GET", server.url("/hang"), timeout_s=0.3)
            message = str(caught.value)
            assert "GET /hang" in message
            assert f"127.0.0.1:{server.port}" in message
            assert "0.3s" in message

    run(scenario())


def test_response_body_that_stalls_raises_deadline_exceeded():
    async def scenario():
        async with serving() as server, rpc_client() as client:
            with pytest.raises(DeadlineExceeded):
                await client.call("GET", server.url("/hang_mid_body"), timeout_s=0.3)

    run(scenario())


def test_request_body_that_stalls_raises_deadline_exceeded():
    async def stalling_body():
        yield b"first chunk"
        await asyncio.Event().wait()  # the rest never comes
        yield b"never"

    async def scenario():
        async with serving() as server, rpc_client() as client:
            with pytest.raises(DeadlineExceeded):
                await client.call("PUT", server.url("/bytes"), data=stalling_body(), timeout_s=0.3)

    run(scenario())


def test_timed_out_connection_is_not_reused():
    async def scenario():
        async with serving() as server, rpc_client() as client:
            await client.call_json("GET", server.url("/echo"))
            with pytest.raises(DeadlineExceeded):
                await client.call_json("GET", server.url("/hang"), timeout_s=0.3)
            await client.call_json("GET", server.url("/echo"))
            first, timed_out, after = server.client_ports
            # Healthy connections are pooled: the second call went over the first connection...
            assert timed_out == first
            # ...but the one that timed out was evicted: the next call opened a new one.
            assert after != timed_out

    run(scenario())


def test_caller_cancellation_also_evicts_the_connection():
    async def scenario():
        async with serving() as server, rpc_client() as client:
            await client.call_json("GET", server.url("/echo"))
            call = asyncio.create_task(client.call_json("GET", server.url("/hang")))
            while len(server.client_ports) < 2:
                await asyncio.sleep(0.01)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            await client.call_json("GET", server.url("/echo"))
            first, cancelled, after = server.client_ports
            assert cancelled == first
            assert after != cancelled

    run(scenario())


def test_peer_that_accepts_but_never_answers_raises_deadline_exceeded():
    async def scenario():
        received = bytearray()

        async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                while chunk := await reader.read(65536):
                    received.extend(chunk)
            finally:
                writer.close()

        silent = await asyncio.start_server(swallow, "127.0.0.1", 0)
        port = silent.sockets[0].getsockname()[1]
        try:
            async with rpc_client() as client:
                with pytest.raises(DeadlineExceeded) as caught:
                    await client.call_json("POST", f"http://127.0.0.1:{port}/x", json={"k": 1}, timeout_s=0.3)
                assert f"127.0.0.1:{port}" in str(caught.value)
            assert received.startswith(b"POST /x HTTP/1.1")  # the request did reach the peer
        finally:
            silent.close()
            await silent.wait_closed()

    run(scenario())


def test_connection_refused_raises_rpc_unavailable():
    async def scenario():
        port = unused_port()
        async with rpc_client() as client:
            with pytest.raises(RpcUnavailable) as caught:
                await client.call_json("GET", f"http://127.0.0.1:{port}/echo")
            assert caught.value.peer == f"127.0.0.1:{port}"
            assert isinstance(caught.value, ConnectionError)

    run(scenario())


def test_client_is_bound_to_one_event_loop():
    async def use(client: RpcClient) -> None:
        with contextlib.suppress(RpcUnavailable):
            await client.call("GET", f"http://127.0.0.1:{unused_port()}/")

    async def scenario():
        async with rpc_client() as client:
            await use(client)
            # Another thread, another loop: refused rather than sharing connections across loops.
            with pytest.raises(RuntimeError, match="another event loop"):
                await asyncio.to_thread(asyncio.run, use(client))

    run(scenario())


# --- deadlines ----------------------------------------------------------------------------------


def test_with_deadline_returns_the_value_and_keeps_inner_timeouts_distinct():
    async def value():
        return 42

    async def inner_timeout():
        raise TimeoutError("inner")

    async def scenario():
        assert await with_deadline(value(), 5, "compute") == 42
        with pytest.raises(TimeoutError, match="inner") as caught:
            await with_deadline(inner_timeout(), 5, "compute")
        assert not isinstance(caught.value, DeadlineExceeded)
        with pytest.raises(DeadlineExceeded, match="heartbeat to be1:9050 did not finish"):
            await with_deadline(asyncio.Event().wait(), 0.05, "heartbeat", peer="be1:9050")

    run(scenario())


def test_shared_deadlines_expire_waits_late_by_at_most_the_resolution_and_share_timers():
    async def scenario():
        deadlines = SharedDeadlines(resolution=0.05)
        loop = asyncio.get_running_loop()

        async def wait(seconds: float, for_s: float):
            scope = deadlines.scope(seconds)
            t0 = loop.time()
            try:
                async with scope:
                    await asyncio.sleep(for_s)
                return "done", scope.expired(), loop.time() - t0
            except TimeoutError:
                return "timeout", scope.expired(), loop.time() - t0

        tasks = [asyncio.ensure_future(wait(0.1, 5)) for _ in range(50)]
        tasks.append(asyncio.ensure_future(wait(5, 0.01)))
        await asyncio.sleep(0)
        # Fifty waits with one timeout share one timer (two if a slot boundary fell between).
        assert len(deadlines._slots) <= 3
        results = await asyncio.gather(*tasks)
        for kind, expired, took in results[:50]:
            # expired at its deadline, not before, and long before the 5 s wait would have ended
            assert kind == "timeout" and expired and 0.1 <= took < 5
        assert results[50][:2] == ("done", False)

        # A cancellation from outside stays a cancellation, and the wait leaves its slot.
        task = asyncio.ensure_future(wait(5, 5))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert all(not slot for slot in deadlines._slots.values())

    run(scenario())


# --- sockets ------------------------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(socket, "TCP_USER_TIMEOUT"), reason="TCP_USER_TIMEOUT is Linux-only")
def test_tune_socket_sets_keepalive_and_user_timeout():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        tune_socket(sock, user_timeout_ms=2500, keepalive_idle_s=4, keepalive_interval_s=2, keepalive_count=5)
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == 2500
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 4
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL) == 2
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT) == 5
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1


@pytest.mark.skipif(not hasattr(socket, "TCP_USER_TIMEOUT"), reason="TCP_USER_TIMEOUT is Linux-only")
def test_server_connections_inherit_tuning_from_the_listening_socket():
    async def scenario():
        async with serving() as server, rpc_client() as client:
            status, options = await client.call_json("GET", server.url("/sockopts"))
            assert status == 200
            assert options == {"user_timeout": 4321, "keepalive": 1}

    run(scenario())


@pytest.mark.skipif(not hasattr(socket, "TCP_USER_TIMEOUT"), reason="TCP_USER_TIMEOUT is Linux-only")
def test_client_connections_are_tuned():
    async def scenario():
        async with serving() as server:
            connector = TunedConnector(user_timeout_ms=1234, keepalive_idle_s=3)
            # The body never completes, so the response still holds its connection.
            async with (
                aiohttp.ClientSession(connector=connector) as session,
                session.get(server.url("/hang_mid_body")) as resp,
            ):
                sock = resp.connection.transport.get_extra_info("socket")
                assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == 1234
                assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 3
                assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
                resp.close()

    run(scenario())


# --- failure detection --------------------------------------------------------------------------


def test_failure_detector_marks_down_after_threshold_and_up_after_one_success():
    detector = FailureDetector(threshold=3)
    assert not detector.is_down("be1")
    detector.record_failure("be1", "refused")
    detector.record_failure("be1", "refused")
    assert not detector.is_down("be1")
    detector.record_success("be1")  # a success resets the count
    for _ in range(3):
        detector.record_failure("be1", "timed out")
    assert detector.is_down("be1")
    assert detector.down_peers() == ["be1"]
    status = detector.status("be1")
    assert status["alive"] is False
    assert status["consecutive_failures"] == 3
    assert status["last_error"] == "timed out"
    assert status["last_failure_time"] is not None
    detector.record_success("be1")
    assert not detector.is_down("be1")
    assert detector.status("be1")["consecutive_failures"] == 0
    assert detector.down_peers() == []


def test_client_reports_to_detector_and_a_returning_peer_is_used_again():
    async def scenario():
        detector = FailureDetector(threshold=2)
        port = unused_port()
        peer = f"127.0.0.1:{port}"
        async with rpc_client(detector=detector) as client:
            for _ in range(2):
                with pytest.raises(RpcUnavailable):
                    await client.call_json("GET", f"http://{peer}/echo")
            assert detector.is_down(peer)
            # The peer comes back on the same port; the next call (the probe) succeeds.
            async with serving(port) as server:
                status, _ = await client.call_json("GET", server.url("/echo"))
            assert status == 200
            assert not detector.is_down(peer)

    run(scenario())


# --- task dump and metrics ----------------------------------------------------------------------


def test_tasks_dump_shows_a_running_task_and_where_it_waits():
    async def waiting_for_a_signal_that_never_comes(event: asyncio.Event) -> None:
        await event.wait()

    async def scenario():
        async with serving() as server, rpc_client() as client:
            event = asyncio.Event()
            stuck = asyncio.create_task(
                waiting_for_a_signal_that_never_comes(event), name="galene-stuck-task"
            )
            await asyncio.sleep(0)
            status, _, body = await client.call("GET", server.url("/api/_tasks"))
            event.set()
            await stuck
            text = body.decode()
            assert status == 200
            assert "galene-stuck-task" in text
            assert "waiting_for_a_signal_that_never_comes" in text
            # The innermost await point (inside asyncio.Event.wait) is shown, not only the outer frame.
            assert "in wait" in text

    run(scenario())


def test_tasks_dump_lists_calls_in_flight_with_peer_and_deadline_and_task_ages():
    """/api/_tasks (text and ?format=json) names every RpcClient call in flight: method, path,
    peer, age, deadline (OVERDUE once past it); each task carries its age."""

    async def scenario():
        install_task_ages()
        async with serving() as server, rpc_client() as client:
            await asyncio.sleep(0.05)
            hanging = asyncio.create_task(
                client.call_json("GET", server.url("/hang"), timeout_s=0.25), name="galene-hung-call"
            )
            await asyncio.sleep(0.1)
            peer = f"127.0.0.1:{server.port}"
            [call] = [c for c in inflight.calls() if c["path"] == "/hang"]
            assert call["kind"] == "rpc" and call["method"] == "GET" and call["peer"] == peer
            assert call["deadline_s"] == 0.25 and not call["overdue"] and call["task"] == "galene-hung-call"
            status, _, body = await client.call("GET", server.url("/api/_tasks"))
            text = body.decode()
            assert status == 200
            assert f"rpc GET /hang -> {peer}: " in text and "(deadline 0.25s)" in text, text
            assert "Task galene-hung-call [pending] age " in text, text
            status, data = await client.call_json("GET", server.url("/api/_tasks?format=json"))
            assert [c["peer"] for c in data["calls"] if c["path"] == "/hang"] == [peer]
            [task] = [t for t in data["tasks"] if t["name"] == "galene-hung-call"]
            assert task["state"] == "pending" and 0.05 < task["age_s"] < 10, task
            assert any(th["stack"] for th in data["threads"])
            with pytest.raises(DeadlineExceeded):
                await hanging
            assert not [c for c in inflight.calls() if c["path"] == "/hang"]  # gone once it ends
            # Storage I/O is registered the same way, and is OVERDUE once past its deadline.
            with inflight.track("storage", "write", "rowsets of table 7", "file:///s", 0.01):
                await asyncio.sleep(0.05)
                [call] = [c for c in inflight.calls() if c["kind"] == "storage"]
                assert call["overdue"] and call["peer"] == "file:///s"
                assert "OVERDUE" in tasks_dump_text()

    run(scenario())


def test_metrics_text_format():
    text = metrics_text(
        {"galene_up": 1, "galene_load_seconds": 0.25},
        {"role": "be", "node": 'n"1'},
        types={"galene_up": "gauge"},
        help={"galene_up": "Whether the node is up."},
    )
    assert text == (
        "# TYPE galene_load_seconds gauge\n"
        'galene_load_seconds{node="n\\"1",role="be"} 0.25\n'
        "# HELP galene_up Whether the node is up.\n"
        "# TYPE galene_up gauge\n"
        'galene_up{node="n\\"1",role="be"} 1\n'
    )
    with pytest.raises(ValueError):
        metrics_text({"bad-name": 1})


def test_metrics_registry_counters_gauges_and_endpoint():
    metrics = Metrics(const_labels={"role": "fe"})
    metrics.describe("galene_loads_total", "counter", "Stream loads received.")
    metrics.inc("galene_loads_total", status="ok")
    metrics.inc("galene_loads_total", 2, status="ok")
    metrics.inc("galene_loads_total", status="fail")
    metrics.set("galene_queue_depth", 7)
    metrics.set_function("galene_backends_alive", lambda: 3)
    with pytest.raises(ValueError):
        metrics.inc("galene_loads_total", -1, status="ok")
    with pytest.raises(ValueError):
        metrics.set("galene_loads_total", 0)
    assert metrics.value("galene_loads_total", status="ok") == 3
    expected = (
        "# TYPE galene_backends_alive gauge\n"
        'galene_backends_alive{role="fe"} 3\n'
        "# HELP galene_loads_total Stream loads received.\n"
        "# TYPE galene_loads_total counter\n"
        'galene_loads_total{role="fe",status="fail"} 1\n'
        'galene_loads_total{role="fe",status="ok"} 3\n'
        "# TYPE galene_queue_depth gauge\n"
        'galene_queue_depth{role="fe"} 7\n'
    )
    assert metrics.render() == expected

    async def scenario():
        app = web.Application()
        app.router.add_get("/metrics", metrics.handler)
        runner = web.AppRunner(app)
        await runner.setup()
        sock = make_server_socket("127.0.0.1", 0)
        await web.SockSite(runner, sock).start()
        try:
            async with rpc_client() as client:
                status, headers, body = await client.call(
                    "GET", f"http://127.0.0.1:{sock.getsockname()[1]}/metrics"
                )
            assert status == 200
            assert headers["Content-Type"] == PROMETHEUS_CONTENT_TYPE
            assert body.decode() == expected
        finally:
            await runner.cleanup()

    run(scenario())


def test_metrics_summaries_count_and_sum_durations():
    metrics = Metrics()
    metrics.observe_ms("galene_fe_txn_commit", 2.5)
    metrics.observe_ms("galene_fe_txn_commit", 1.5)
    assert metrics.summary("galene_fe_txn_commit_ms") == (2, 4.0)
    assert metrics.render() == (
        "# TYPE galene_fe_txn_commit_ms summary\n"
        "galene_fe_txn_commit_ms_count 2\n"
        "galene_fe_txn_commit_ms_sum 4.0\n"
    )
    with pytest.raises(ValueError):
        metrics.inc("galene_fe_txn_commit_ms")


def test_client_counts_outcomes_in_metrics():
    async def scenario():
        metrics = Metrics()
        async with serving() as server, rpc_client(metrics=metrics) as client:
            await client.call_json("GET", server.url("/echo"))
            with pytest.raises(DeadlineExceeded):
                await client.call_json("GET", server.url("/hang"), timeout_s=0.2)
            peer = f"127.0.0.1:{server.port}"
            assert metrics.value("galene_rpc_requests_total", peer=peer, outcome="ok") == 1
            assert metrics.value("galene_rpc_requests_total", peer=peer, outcome="timeout") == 1

    run(scenario())


# --- a black-holed peer, inside a private network namespace ------------------------------------

BLACKHOLE_CHILD = r"""
import asyncio, json, subprocess, sys
from aiohttp import web
from galene.net.client import RpcClient
from galene.net.server import make_server_socket

async def main(deadline_s, user_timeout_ms):
    async def ok(request):
        return web.json_response({"ok": True})
    app = web.Application()
    app.router.add_get("/ok", ok)
    runner = web.AppRunner(app, shutdown_timeout=1.0)
    await runner.setup()
    sock = make_server_socket("127.0.0.1", 0, user_timeout_ms=user_timeout_ms)
    await web.SockSite(runner, sock).start()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/ok"
    client = RpcClient(user_timeout_ms=user_timeout_ms, keepalive_idle_s=1)
    outcome = {"before": (await client.call_json("GET", url))[0]}
    # Black hole: every packet on this namespace's loopback is dropped (a pfifo queue of
    # length 0 drops all it is given, like an iptables DROP rule without needing iptables).
    subprocess.run(["tc", "qdisc", "add", "dev", "lo", "root", "pfifo", "limit", "0"], check=True)
    try:
        await client.call_json("GET", url, timeout_s=deadline_s)
        outcome["during"] = "answered"
    except Exception as exc:
        outcome["during"] = type(exc).__name__
    subprocess.run(["tc", "qdisc", "del", "dev", "lo", "root"], check=True)
    await client.close()
    await runner.cleanup()
    print(json.dumps(outcome))

asyncio.run(main(float(sys.argv[1]), int(sys.argv[2])))
"""


def _run_blackhole_child(tmp_path: Path, netns: str, deadline_s: float, user_timeout_ms: int) -> dict:
    script = tmp_path / "blackhole_child.py"
    script.write_text(BLACKHOLE_CHILD)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        ["ip", "netns", "exec", netns, sys.executable, str(script), str(deadline_s), str(user_timeout_ms)],
        capture_output=True,
        check=False,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout.decode().strip().splitlines()[-1])


@pytest.mark.slow
def test_black_holed_peer_fails_by_deadline_and_by_tcp_user_timeout(tmp_path):
    reason = loopback_unavailable_reason()
    if reason:
        pytest.skip(f"black-hole test needs a private network namespace: {reason}")
    with loopback_namespace() as netns:
        # A short call deadline: the timer ends the call although no packet ever comes back.
        assert _run_blackhole_child(tmp_path, netns, 1.0, 30000) == {
            "before": 200,
            "during": "DeadlineExceeded",
        }
        # A long call deadline: TCP_USER_TIMEOUT makes the kernel give up on the connection
        # first, so the caller learns the peer is unreachable without waiting for the deadline.
        assert _run_blackhole_child(tmp_path, netns, 60.0, 1000) == {
            "before": 200,
            "during": "RpcUnavailable",
        }
