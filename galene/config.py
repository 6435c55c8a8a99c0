"""Configuration: fe.conf / be.conf keys (Doris names where Doris has one) + overrides.

Precedence, lowest first: built-in defaults, `<conf_dir>/fe.conf` and `be.conf`
(`key = value` lines, `#` comments), environment variables `GALENE_<KEY>` (upper case),
then `--conf key=value` from the command line. Unknown keys are refused so a typo does not
silently do nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path


@dataclass
class Config:
    # --- common ---------------------------------------------------------------------
    data_dir: str = "./galene-data"  # meta/ and the default storage root live here
    storage_root: str = ""  # default: file://<data_dir>/storage ; may be s3://bucket/prefix
    priority_networks: str = "127.0.0.1"
    cluster_token: str = ""  # inter-node token; generated on first start when empty
    # --- FE -------------------------------------------------------------------------
    http_port: int = 8030
    query_port: int = 9030
    edit_log_port: int = 9010
    rpc_port: int = 9020
    meta_dir: str = ""  # default: <data_dir>/fe-meta
    edit_log_roll_num: int = 50000
    master_sync_policy: str = "SYNC"  # SYNC | WRITE_NO_SYNC | NO_SYNC
    label_keep_max_second: int = 3 * 24 * 3600
    stream_load_default_timeout_second: int = 259200
    stream_load_default_precommit_timeout_second: int = 3600
    heartbeat_interval_second: int = 5
    max_backend_heartbeat_failure_times: int = 3
    # Doris: the PREPARE txns a BE coordinates are aborted once its heartbeats have failed this
    # long ("coordinate BE is down"), and at once when it restarts (fe/backends.py).
    abort_txn_after_lost_heartbeat_time_second: int = 300
    gc_grace_seconds: int = 600  # unreferenced data files younger than this are kept
    gc_interval_seconds: int = 300
    # Query engine: spark (Apache Spark: spark_master, SPARK_MASTER / SPARK_REMOTE) | sail (an
    # embedded Sail server, a child process of the FE: galene/engine/sail.py). `--engine sail`.
    engine: str = "spark"
    spark_master: str = ""  # default local[*]; SPARK_MASTER / SPARK_REMOTE env override
    spark_driver_memory: str = "2g"
    # More JVM options for a Spark driver the FE launches (spark.driver.extraJavaOptions), e.g.
    # `-XX:TieredStopAtLevel=1` where JVMs are short-lived (the test suite: C2 compilations they
    # never amortize were a third of its CPU).
    spark_driver_java_options: str = ""
    spark_shuffle_partitions: int = 4
    # MySQL endpoint bounds (Doris names). Connections past qe_max_connection (or a user's
    # past max_user_connections) are refused with Doris' error; a connection that has not
    # finished its login within connect_timeout seconds is closed. The session variables
    # max_allowed_packet and wait_timeout take their defaults from here.
    qe_max_connection: int = 1024
    max_user_connections: int = 100
    connect_timeout: int = 10
    max_allowed_packet: int = 16 << 20
    wait_timeout: int = 28800
    # Deepest bracket nesting accepted in a SQL statement (parsers recurse on it).
    max_sql_nesting_depth: int = 200
    # --- users (galene/fe/auth.py) -----------------------------------------------------
    # root's password when a cluster is created (ignored afterwards): Doris' form, the hash
    # `*` + 40 hex digits as PASSWORD('…') prints it, or (Galene) the clear password, of which
    # only the hash is stored. Also GALENE_INITIAL_ROOT_PASSWORD. Empty: root starts without one.
    initial_root_password: str = ""
    # --- supervisor (galene start) --------------------------------------------------
    # FE side, set by `galene start`: the BE the standalone FE adds to an empty cluster.
    standalone_backend: str = ""
    # --- BE -------------------------------------------------------------------------
    be_http_port: int = 8040
    # 0 = answer heartbeats on the BE HTTP port (so instances can run side by side);
    # set 9050 to also listen where Doris does.
    heartbeat_service_port: int = 0
    be_port: int = 9060
    brpc_port: int = 8060
    # Stream-load bounds. streaming_load_max_mb counts the body's bytes after decompression;
    # JSON bodies read as one document (not line by line) are held whole and capped by
    # streaming_load_json_max_mb (Doris' names and defaults).
    streaming_load_max_mb: int = 10240
    streaming_load_json_max_mb: int = 100
    # Deepest nesting of [ / { in a JSON body (checked before any parser sees it).
    load_json_max_depth: int = 100
    # Longest line of a CSV body or line of a read_json_by_line body, in bytes.
    load_max_line_bytes: int = 64 << 20
    # HTTP request heads (FE and BE): header count, and bytes of the request line or of one header.
    http_max_headers: int = 128
    http_max_header_bytes: int = 65536
    load_error_log_dir: str = ""  # default: <data_dir>/be/error_log
    load_error_log_max_rows: int = 50
    be_meta_dir: str = ""  # default: <data_dir>/be
    # Group commit WAL (<be dir>/wal): bytes it may hold; async loads fall back to
    # sync_mode (no WAL) while it is full, as Doris does.
    group_commit_wal_max_disk_limit: int = 10 << 30
    # Parse small group-commit loads and write the WAL in a child process (its own GIL);
    # false: the same code in a thread of the BE process.
    group_commit_ingest_worker: bool = True
    # Group commit keeps a load's rows in memory until they are in the WAL, so it takes small
    # loads only: a body declared larger than this, or compressed (its inflated size is
    # unknown), runs as a normal streamed load, as Doris falls back for 2PC or partitions; a
    # chunked body larger than this fails with a message naming this key.
    group_commit_max_load_mb: int = 16
    # Compaction (Doris' BE keys; in Galene the FE's engine compacts: galene/fe/compaction.py).
    # A tablet is compacted in the background once it has this many small rowsets above its
    # newest large one; one cumulative compaction merges at most max_deltas of them.
    cumulative_compaction_min_deltas: int = 5
    cumulative_compaction_max_deltas: int = 1000
    # No background compaction (ADMIN COMPACT and /api/compaction/run still work); as in Doris
    # this also lifts max_tablet_version_num. Also a table property.
    disable_auto_compaction: bool = False
    # A load into a table with a tablet of more rowsets than this fails (Doris' -235 error).
    max_tablet_version_num: int = 2000
    # Galene: how often the FE looks for tablets to compact.
    compaction_scheduler_interval_ms: int = 5000
    # Galene: a DUPLICATE compaction whose input rowsets hold at most this many MB (UNIQUE: a
    # quarter of it, held whole for the merge) and were written with the table's current schema
    # is merged by a BE with pyarrow (load/local_merge.py), not by an engine job: an engine job
    # costs 1-2 s of CPU whatever its size, which a table fed by group commit (a rowset a second)
    # paid every few seconds. 0: always the engine. A BE refuses runs over its own value.
    compaction_local_max_mb: int = 64
    # --- network discipline ---------------------------------------------------------
    rpc_timeout_ms: int = 10000  # default deadline of one FE<->BE call
    tcp_user_timeout_ms: int = 5000  # the sockets of this node's calls (each also under a deadline)
    # Accepted HTTP connections (stream loads, peers' calls): how long the kernel
    # keeps retrying an answer nobody acknowledges before it drops the connection. Longer than
    # a call's: the expiry sends no reset, so a client on a slow, lossy link whose answer (maybe
    # of a committed load) is dropped this way waits out its own timeout without one; 5 s lost
    # answers under tbf 64 kbit/s with 64 clients. A vanished client is still noticed within it.
    tcp_server_user_timeout_ms: int = 30000
    tcp_keepalive_idle_s: int = 5
    # --- cluster: write canary, load routing, forwarding (docs/ARCHITECTURE.md "Cluster") ----
    # The FE's write canary: a one-row load through each BE's real write path every interval
    # (0: off), each stage under a deadline within the timeout; a BE whose canary failed this
    # many rounds in a row is Writable=false in SHOW BACKENDS and gets no loads.
    be_canary_interval_second: int = 5
    be_canary_timeout_second: int = 5
    be_canary_failure_times: int = 2
    # Doris 3.1+: the `redirect-policy` used when a load sends none (direct | random-be | public |
    # private | public-private; empty: Doris' default rule).
    streamload_redirect_policy: str = ""
    # Doris #55326: a group-commit load redirected to an endpoint that is not its table's owner
    # BE (a load balancer) goes to `_stream_load_forward?forward_to=<owner>`; the BE forwards it.
    enable_group_commit_streamload_be_forward: bool = True
    # BE: the forward hop's connect deadline (past it, with no body byte sent, the receiving BE
    # loads the data itself) and its deadline for the owner's answer once the body is sent.
    be_forward_connect_timeout_second: int = 3
    be_forward_timeout_second: int = 60
    # BE: the deadline of one WAL replica call (replication_num > 1); a peer past it is
    # dropped from the group's replica set and replaced, never waited for again.
    be_wal_replica_timeout_second: int = 3
    # BE: a group-commit flush's rowset write that takes longer fails that attempt (retried);
    # storage that does not answer never parks a group for good.
    storage_write_timeout_second: int = 300
    # Doris' debug points (POST /api/debug_point/add/{name}?timeout=…) on FE and BE: tests only.
    enable_debug_points: bool = False
    # --- standalone wiring ----------------------------------------------------------
    fe_host: str = "127.0.0.1"  # where a BE finds its FE
    fe_http_port: int = 0  # BE side: FE's http port (default: http_port)

    extra: dict[str, str] = field(default_factory=dict)

    @property
    def meta_path(self) -> Path:
        return Path(self.meta_dir or os.path.join(self.data_dir, "fe-meta"))

    @property
    def be_path(self) -> Path:
        return Path(self.be_meta_dir or os.path.join(self.data_dir, "be"))

    @property
    def storage_uri(self) -> str:
        if self.storage_root:
            return self.storage_root
        return "file://" + os.path.abspath(os.path.join(self.data_dir, "storage"))

    @property
    def error_log_path(self) -> Path:
        return Path(self.load_error_log_dir or os.path.join(self.data_dir, "be", "error_log"))

    def set(self, key: str, value: str) -> None:
        """Set one key from text, converting to the field's type."""
        key = key.strip()
        known = {f.name: f for f in fields(self) if f.name != "extra"}
        if key not in known:
            raise ValueError(f"unknown config key: {key}")
        current = getattr(self, key)
        value = value.strip()
        if isinstance(current, bool):
            setattr(self, key, value.lower() in ("1", "true", "yes", "on"))
        elif isinstance(current, int):
            setattr(self, key, int(value))
        else:
            setattr(self, key, value)


def read_conf_file(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    if not path.exists():
        return out
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        k, v = line.split("=", 1)
        out[k.strip()] = v.strip().strip('"')
    return out


def load_config(conf_dir: str | None = None, overrides: list[str] | None = None, **kw) -> Config:
    cfg = Config()
    if conf_dir:
        for name in ("fe.conf", "be.conf"):
            for k, v in read_conf_file(Path(conf_dir) / name).items():
                cfg.set(k, v)
    for f in fields(cfg):
        env = os.environ.get("GALENE_" + f.name.upper())
        if env is not None and f.name != "extra":
            cfg.set(f.name, env)
    for item in overrides or []:
        if "=" not in item:
            raise ValueError(f"--conf expects key=value, got {item!r}")
        k, v = item.split("=", 1)
        cfg.set(k, v)
    for k, v in kw.items():
        if v is not None:
            setattr(cfg, k, v)
    if not cfg.fe_http_port:
        cfg.fe_http_port = cfg.http_port
    return cfg
