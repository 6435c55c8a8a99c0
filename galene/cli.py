"""The one entry point: `galene start | fe | be | meta …`.

`start` runs a standalone Galene (one FE, one BE, local Spark): a small supervisor
(`galene.supervisor`) runs `fe` and `be` as separate processes and restarts either if it dies.
`--engine sail` runs queries on an embedded Sail server (a child of the FE) instead of Spark.
`fe` and `be` run one role each (a BE joins with `ALTER SYSTEM ADD BACKEND 'host:port'`).
`meta` holds operator tools.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import shutil
import signal
import subprocess
import sys

from galene.config import Config, load_config

# The query engines (galene.engine.session.ENGINES, named here to keep the CLI's imports light).
ENGINES = ("spark", "sail")


def check_java() -> None:
    java = shutil.which("java") or (
        os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else None
    )
    if not java or not os.path.exists(java):
        sys.exit(
            "galene: Java 17+ is required for Spark but `java` was not found. Install OpenJDK 17 (apt-get install openjdk-17-jre-headless)."
        )
    out = subprocess.run([java, "-version"], capture_output=True, text=True, check=False).stderr
    import re

    m = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    major = int(m.group(1)) if m else 0
    if major == 1 and m.group(2):
        major = int(m.group(2))
    if major < 17:
        sys.exit(
            f"galene: Java 17+ is required for Spark, found: {out.splitlines()[0] if out else 'unknown'}"
        )


def _common_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--data-dir", default=None, help="data directory (metadata, storage, logs); default ./galene-data"
    )
    p.add_argument("--conf-dir", default=None, help="directory with fe.conf / be.conf")
    p.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set any fe.conf/be.conf key (repeatable), e.g. --conf edit_log_roll_num=10",
    )
    p.add_argument("--log-level", default=os.environ.get("GALENE_LOG_LEVEL", "INFO"))
    # Set by `galene start` on its children: the supervisor prints the banner, not the role.
    p.add_argument("--supervised", action="store_true", help=argparse.SUPPRESS)


def _engine_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default=None,
        help="query engine: spark (Apache Spark: local[*], SPARK_MASTER or SPARK_REMOTE; the default) "
        "or sail (an embedded Sail server); the `engine` config key",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="galene", description="Galene: Doris-compatible warehouse on Spark")
    sub = parser.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("start", help="run a standalone Galene (FE + BE + local Spark) in the foreground")
    _common_args(p)
    p.add_argument("--http-port", type=int, default=None, help="FE HTTP port (default 8030)")
    p.add_argument("--query-port", type=int, default=None, help="FE MySQL-protocol port (default 9030)")
    p.add_argument("--be-http-port", type=int, default=None, help="BE HTTP (stream load) port (default 8040)")
    _engine_arg(p)

    p = sub.add_parser("fe", help="run an FE process")
    _common_args(p)
    p.add_argument("--http-port", type=int, default=None)
    p.add_argument("--query-port", type=int, default=None)
    _engine_arg(p)

    p = sub.add_parser("be", help="run a BE process (join it with ALTER SYSTEM ADD BACKEND 'host:port')")
    _common_args(p)
    p.add_argument("--be-http-port", type=int, default=None)

    p = sub.add_parser(
        "doctor",
        help="probe every hop of a cluster (client, FE, BEs, storage, ingest workers) and name what is stuck",
    )
    p.add_argument("--fe", required=True, metavar="HOST:HTTP_PORT", help="the FE's HTTP address")
    p.add_argument("-u", "--user", default="root:", metavar="USER:PASS", help="an admin user (default root:)")
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    p.add_argument("--timeout", default=3.0, type=float, help="deadline of each probe, seconds (default 3)")

    p = sub.add_parser("meta", help="metadata operator tools")
    msub = p.add_subparsers(dest="meta_cmd", required=True)
    v = msub.add_parser("validate-image", help="check an image file")
    v.add_argument("path")
    d = msub.add_parser("dump", help="print the state in an image file as JSON")
    d.add_argument("path")
    j = msub.add_parser("journal", help="list journal entries of a meta dir")
    j.add_argument("meta_dir")
    j.add_argument("--from", dest="from_id", type=int, default=1)
    j.add_argument("--limit", type=int, default=100)
    return parser


def make_config(args) -> Config:
    kw = {}
    if args.data_dir:
        kw["data_dir"] = args.data_dir
    for name in ("http_port", "query_port", "be_http_port", "engine"):
        val = getattr(args, name, None)
        if val is not None:
            kw[name] = val
    # load_config points fe_http_port at http_port unless it was given (`galene be --conf fe_http_port=P`).
    return load_config(args.conf_dir or ("conf" if os.path.isdir("conf") else None), args.conf, **kw)


def _role_args(args) -> list[str]:
    """The options `galene start` passes on to its FE and BE children."""
    out = ["--data-dir", args.data_dir or "./galene-data", "--log-level", str(args.log_level)]
    if args.conf_dir:
        out += ["--conf-dir", args.conf_dir]
    for item in args.conf:
        out += ["--conf", item]
    if getattr(args, "engine", None):
        out += ["--conf", f"engine={args.engine}"]  # the FE's key (the BE ignores it)
    return out


async def _serve(cfg: Config, role: str, supervised: bool = False) -> None:
    from galene.be.server import BeServer
    from galene.common.process import settle_heap
    from galene.fe.server import FeServer

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    fe = be = None
    try:
        if role == "fe":
            fe = FeServer(cfg)
            await fe.start()
            if not supervised:
                print(
                    f"Galene FE ready: mysql -h{fe.host} -P{fe.query_port} -uroot   http://{fe.host}:{fe.http_port}",
                    flush=True,
                )
        else:
            be = BeServer(cfg)
            await be.start()
            if not supervised:
                print(
                    f"Galene BE ready on {be.host}:{be.http_port}; join it with: "
                    f"ALTER SYSTEM ADD BACKEND '{be.host}:{be.http_port}';",
                    flush=True,
                )
        settle_heap()
        await stop.wait()
    finally:
        if not supervised:
            print(f"Galene {role.upper()} stopping...", flush=True)
        if be is not None:
            await be.stop()
        if fe is not None:
            await fe.stop()
        if not supervised:
            print(f"Galene {role.upper()} stopped.", flush=True)


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if args.cmd == "doctor":
        from galene import doctor

        sys.exit(doctor.main(args))
    if args.cmd == "meta":
        from galene.meta import tools

        if args.meta_cmd == "validate-image":
            ok, msg = tools.validate_image(args.path)
            print(msg)
            sys.exit(0 if ok else 1)
        if args.meta_cmd == "dump":
            journal_id, state = tools.read_image(args.path)
            print(
                json.dumps(
                    {"journal_id": journal_id, "state": tools.dump_state(state)}, indent=2, default=str
                )
            )
            return
        if args.meta_cmd == "journal":
            for row in tools.list_journal(args.meta_dir, args.from_id, args.limit):
                print(json.dumps(row, default=str))
            return
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.INFO),
        format=f"%(asctime)s {args.cmd} %(levelname)s %(name)s: %(message)s",
    )
    cfg = make_config(args)
    if args.cmd in ("start", "fe"):
        cfg.engine = cfg.engine.strip().lower()
        if cfg.engine not in ENGINES:
            sys.exit(f"galene: unknown engine '{cfg.engine}' (expected one of: {', '.join(ENGINES)})")
        if cfg.engine == "spark":  # Sail needs no JVM
            check_java()
    if args.cmd == "start":
        from galene.supervisor import Supervisor

        sys.exit(Supervisor(cfg, _role_args(args)).run())
    from galene.common.process import disable_pyarrow_signal_handlers, keep_freed_heap

    disable_pyarrow_signal_handlers()
    keep_freed_heap()
    _run(_serve(cfg, args.cmd, supervised=args.supervised))


def _run(coro) -> None:
    """Run the server on uvloop when it is installed (a cheaper event loop and transports:
    ~25% less CPU per small stream load here), else on asyncio's own loop."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(coro)
        return
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(coro)


if __name__ == "__main__":
    main()
