"""The system variables of a MySQL/Doris session: their specs (kind, Doris-like default, read
only, choices), the server-wide values every new session starts from (`GlobalVariables`; SET
GLOBAL changes them), one session's values (`SessionVariables`, the live mapping the executor
reads as `SessionContext.variables`), and how a SET value is checked and stored (MySQL's
1193 / 1231 / 1232; `sql_mode` as Doris keeps it)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from galene.common.errors import GaleneError

ER_UNKNOWN_SYSTEM_VARIABLE = 1193
ER_WRONG_VALUE_FOR_VAR = 1231
ER_WRONG_TYPE_FOR_VAR = 1232


def system_time_zone() -> str:
    """The host's IANA zone name, which Doris reports as system_time_zone and time_zone."""
    tz = os.environ.get("TZ", "").lstrip(":")
    if "/" in tz or tz == "UTC":
        return tz
    try:
        target = os.path.realpath("/etc/localtime")
        marker = "/zoneinfo/"
        if marker in target:
            return target.split(marker, 1)[1]
    except OSError:
        pass
    try:
        with open("/etc/timezone", encoding="ascii") as f:
            name = f.read().strip()
            if name:
                return name
    except OSError:
        pass
    return "UTC"




# Kinds: "switch" is a MySQL on/off variable (reads back as 1/0), "bool" a Doris boolean
# (true/false), "int", "float", "str", "sql_mode" (a list of modes, kept as Doris keeps it).
@dataclass(frozen=True)
class VariableSpec:
    kind: str
    default: Any
    read_only: bool = False
    choices: tuple[str, ...] = ()


def _specs(time_zone: str, version: str, version_comment: str) -> dict[str, VariableSpec]:
    return {
        "auto_increment_increment": VariableSpec("int", 1),
        "autocommit": VariableSpec("switch", 1),
        "character_set_client": VariableSpec("str", "utf8mb4"),
        "character_set_connection": VariableSpec("str", "utf8mb4"),
        "character_set_database": VariableSpec("str", "utf8mb4"),
        "character_set_results": VariableSpec("str", "utf8mb4"),
        "character_set_server": VariableSpec("str", "utf8mb4"),
        "collation_connection": VariableSpec("str", "utf8mb4_0900_bin"),
        "collation_database": VariableSpec("str", "utf8mb4_0900_bin"),
        "collation_server": VariableSpec("str", "utf8mb4_0900_bin"),
        "default_storage_engine": VariableSpec("str", "olap"),
        "default_tmp_storage_engine": VariableSpec("str", "olap"),
        "div_precision_increment": VariableSpec("int", 4),
        "enable_decimal256": VariableSpec("bool", False),
        "enable_insert_strict": VariableSpec("bool", True),
        "enable_profile": VariableSpec("bool", False),
        "exec_mem_limit": VariableSpec("int", 2147483648),
        "group_commit": VariableSpec("str", "off_mode", choices=("off_mode", "sync_mode", "async_mode")),
        "have_query_cache": VariableSpec("str", "YES", read_only=True),
        "init_connect": VariableSpec("str", ""),
        "insert_max_filter_ratio": VariableSpec("float", 1.0),
        "insert_timeout": VariableSpec("int", 14400),
        "interactive_timeout": VariableSpec("int", 3600),
        "language": VariableSpec("str", "/palo/share/english/", read_only=True),
        "license": VariableSpec("str", "Apache License, Version 2.0", read_only=True),
        "lower_case_table_names": VariableSpec("int", 0, read_only=True),
        "max_allowed_packet": VariableSpec("int", 16777216),
        "max_execution_time": VariableSpec("int", -1),
        "net_buffer_length": VariableSpec("int", 16384, read_only=True),
        "net_read_timeout": VariableSpec("int", 600),
        "net_write_timeout": VariableSpec("int", 600),
        "parallel_pipeline_task_num": VariableSpec("int", 0),
        "performance_schema": VariableSpec("switch", 0, read_only=True),
        "query_cache_size": VariableSpec("int", 1048576),
        "query_cache_type": VariableSpec("int", 0),
        "query_timeout": VariableSpec("int", 900),
        "resource_group": VariableSpec("str", ""),
        "sql_auto_is_null": VariableSpec("switch", 0),
        "sql_mode": VariableSpec("sql_mode", "ONLY_FULL_GROUP_BY"),
        "sql_safe_updates": VariableSpec("int", 0),
        "sql_select_limit": VariableSpec("int", 9223372036854775807),
        # The server's Unix socket (none): the Rust `mysql` crate (connectorx) reads @@socket on
        # a loopback connection and keeps TCP when it is empty; an error fails its connect.
        "socket": VariableSpec("str", "", read_only=True),
        "system_time_zone": VariableSpec("str", time_zone, read_only=True),
        "time_zone": VariableSpec("str", time_zone),
        "transaction_isolation": VariableSpec(
            "str",
            "REPEATABLE-READ",
            choices=("READ-UNCOMMITTED", "READ-COMMITTED", "REPEATABLE-READ", "SERIALIZABLE"),
        ),
        "transaction_read_only": VariableSpec("switch", 0),
        "version": VariableSpec("str", version, read_only=True),
        "version_comment": VariableSpec("str", version_comment, read_only=True),
        "wait_timeout": VariableSpec("int", 28800),
    }


# Doris session variables Galene accepts in SET without modelling them (SessionVariable.java):
# clients and scripts written for Doris set these; any other unknown name is Doris' 1193.
DORIS_SESSION_VARIABLES = frozenset(
    (
        "max_scan_mem_ratio", "enable_adaptive_scan", "scan_queue_mem_limit", "max_scanners_concurrency",
        "analyze_timeout", "rpc_verbose_profile_max_instance_count", "auto_profile_threshold_ms",
        "workload_group", "lc_time_names", "batch_size", "broker_load_batch_size", "preferred_block_size_bytes",
        "disable_streaming_preaggregations", "enable_distinct_streaming_aggregation", "disable_colocate_plan",
        "enable_bucket_shuffle_join", "parallel_fragment_exec_instance_num", "profile_level",
        "max_instance_num", "enable_insert_value_auto_cast", "enable_server_side_prepared_statement",
        "max_prepared_stmt_count", "prefer_join_method", "enable_fold_constant_by_be", "enable_sql_cache",
        "enable_query_cache", "enable_condition_cache", "enable_cost_based_join_reorder", "forward_to_master",
        "parallel_exchange_instance_num", "show_hidden_columns", "event_scheduler", "storage_engine",
        "profiling", "max_scan_key_num", "max_pushdown_conditions_per_column",
        "allow_partition_column_nullable", "runtime_filter_mode", "runtime_bloom_filter_size",
        "runtime_bloom_filter_min_size", "runtime_bloom_filter_max_size", "runtime_filter_wait_time_ms",
        "runtime_filter_type", "runtime_filter_max_in_num", "runtime_filters_max_num",
        "enable_parallel_result_sink", "read_csv_empty_line_as_null", "insert_visible_timeout_ms",
        "delete_without_partition", "send_batch_parallelism", "disable_join_reorder",
        "max_join_number_of_reorder", "enable_nereids_dml", "enable_strict_consistency_dml",
        "enable_nereids_planner", "experimental_enable_nereids_planner", "enable_fallback_to_original_planner",
        "enable_vectorized_engine", "enable_pipeline_engine", "enable_pipeline_x_engine", "load_mem_limit",
        "enable_unique_key_partial_update", "partial_update_new_key_behavior", "skip_delete_predicate",
        "skip_delete_sign", "skip_delete_bitmap", "skip_storage_engine_merge", "return_object_data_as_binary",
        "trim_tailing_spaces_for_external_table_query", "default_order_by_limit", "sql_dialect", "enable_spill",
        "enable_local_shuffle", "enable_common_expr_pushdown", "enable_inverted_index_query",
        "enable_match_without_inverted_index", "disable_nereids_rules", "enable_memtable_on_sink_node",
        "enable_insert_group_commit", "enable_local_exchange", "topn_opt_limit_threshold",
        "enable_two_phase_read_opt", "enable_scan_run_serial", "enable_agg_state", "enable_decimal256",
        "enable_runtime_filter_prune", "fetch_all_fe_for_system_table", "enable_strong_consistency_read",
        "time_zone_fallback", "default_password_lifetime", "character_set_database", "dry_run_query",
        "enable_page_cache", "enable_short_circuit_query", "enable_short_circuit_query_access_column_store",
        "num_scanner_threads", "enable_profile_on_insert"
    )
)  # fmt: skip

# Old names that read and write the same value.
_SYNONYMS = {"tx_isolation": "transaction_isolation", "tx_read_only": "transaction_read_only"}
# Carried in the session but not listed by SHOW VARIABLES (set by the handshake).
_HIDDEN = {"external_user"}

_TRUE_WORDS = {"1", "ON", "TRUE", "YES"}
_FALSE_WORDS = {"0", "OFF", "FALSE", "NO"}


class _Default:
    """Marker for SET x = DEFAULT."""


DEFAULT = _Default()


class GlobalVariables:
    """Server-wide variable values: the defaults every new session starts from (SET GLOBAL changes them).

    `max_allowed_packet` and `wait_timeout` default to the FE config keys of the same names
    (they bound every connection: see galene.fe.mysql.framing).
    """

    def __init__(
        self,
        version: str,
        version_comment: str,
        time_zone: str | None = None,
        *,
        max_allowed_packet: int = 16777216,
        wait_timeout: int = 28800,
    ):
        self.specs = _specs(time_zone or system_time_zone(), version, version_comment)
        self.specs["max_allowed_packet"] = VariableSpec("int", max_allowed_packet)
        self.specs["wait_timeout"] = VariableSpec("int", wait_timeout)
        self.values: dict[str, Any] = {name: spec.default for name, spec in self.specs.items()}


def canonical_name(name: str) -> str:
    name = name.lower()
    return _SYNONYMS.get(name, name)


class SessionVariables:
    """The variables of one session.

    `values` is the live mapping handed to the executor as `SessionContext.variables`.
    `get`/`set(name, value, force=)` is the interface mysql-mimic's Connection uses during the
    handshake (character_set_client, external_user).
    """

    def __init__(self, global_variables: GlobalVariables):
        self.global_variables = global_variables
        self.values: dict[str, Any] = dict(global_variables.values)

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(canonical_name(name), default)

    def set(self, name: str, value: Any, force: bool = False) -> None:
        name = canonical_name(name)
        spec = self.global_variables.specs.get(name)
        if spec is None:
            self.values[name] = value
            return
        if spec.read_only and not force:
            raise GaleneError(f"Variable '{name}' is a read only variable", ER_WRONG_VALUE_FOR_VAR)
        self.values[name] = coerce_variable(name, spec, value)

    def set_scoped(self, name: str, value: Any, scope: str) -> None:
        """SET [GLOBAL|SESSION] name = value. GLOBAL also changes this session, as Doris does.
        A name Doris does not know is refused with its error (1193); a Doris variable Galene
        does not model is kept as given (SHOW VARIABLES lists it once set)."""
        name = canonical_name(name)
        if name not in self.global_variables.specs and name not in DORIS_SESSION_VARIABLES:
            raise GaleneError(f"Unknown system variable '{name}'", ER_UNKNOWN_SYSTEM_VARIABLE)
        if value is DEFAULT:
            spec = self.global_variables.specs.get(name)
            if spec is None:
                raise GaleneError(f"Unknown system variable '{name}'", ER_UNKNOWN_SYSTEM_VARIABLE)
            value = spec.default if scope == "GLOBAL" else self.global_variables.values[name]
        self.set(name, value)
        if scope == "GLOBAL":
            self.global_variables.values[name] = self.values[name]

    def read(self, name: str, scope: str = "SESSION") -> Any:
        """@@[scope.]name; unknown names raise MySQL error 1193."""
        name = canonical_name(name)
        source = self.global_variables.values if scope == "GLOBAL" else self.values
        if name not in source or name in _HIDDEN:
            raise GaleneError(f"Unknown system variable '{name}'", ER_UNKNOWN_SYSTEM_VARIABLE)
        return source[name]

    def listing(self, scope: str = "SESSION") -> list[tuple[str, str]]:
        source = self.global_variables.values if scope == "GLOBAL" else self.values
        return [(k, display_value(v)) for k, v in sorted(source.items()) if k not in _HIDDEN]


def coerce_variable(name: str, spec: VariableSpec, value: Any) -> Any:
    text = "" if value is None else str(value)
    if spec.kind in ("switch", "bool"):
        word = text.upper()
        if isinstance(value, bool):
            truth = value
        elif word in _TRUE_WORDS:
            truth = True
        elif word in _FALSE_WORDS:
            truth = False
        else:
            raise GaleneError(
                f"Variable '{name}' can't be set to the value of '{text}'", ER_WRONG_VALUE_FOR_VAR
            )
        return int(truth) if spec.kind == "switch" else truth
    if spec.kind == "int":
        try:
            return int(value)
        except (TypeError, ValueError):
            raise GaleneError(
                f"Incorrect argument type to variable '{name}'", ER_WRONG_TYPE_FOR_VAR
            ) from None
    if spec.kind == "sql_mode":
        return sql_mode_text(text)
    if spec.kind == "float":
        try:
            return float(value)
        except (TypeError, ValueError):
            raise GaleneError(
                f"Incorrect argument type to variable '{name}'", ER_WRONG_TYPE_FOR_VAR
            ) from None
    if spec.choices:
        for choice in spec.choices:
            if choice.lower() == text.lower():
                return choice
        raise GaleneError(f"Variable '{name}' can't be set to the value of '{text}'", ER_WRONG_VALUE_FOR_VAR)
    return text


# Doris' SqlModeHelper: the modes it knows with their bits, and the two that imply others.
_SQL_MODE_BITS = {
    "DEFAULT": 1, "PIPES_AS_CONCAT": 1 << 1, "ANSI_QUOTES": 1 << 2, "IGNORE_SPACE": 1 << 3, "NOT_USED": 1 << 4,
    "ONLY_FULL_GROUP_BY": 1 << 5, "NO_UNSIGNED_SUBTRACTION": 1 << 6, "NO_DIR_IN_CREATE": 1 << 7, "ANSI": 1 << 18,
    "NO_AUTO_VALUE_ON_ZERO": 1 << 19, "NO_BACKSLASH_ESCAPES": 1 << 20, "STRICT_TRANS_TABLES": 1 << 21,
    "STRICT_ALL_TABLES": 1 << 22, "NO_ZERO_IN_DATE": 1 << 23, "NO_ZERO_DATE": 1 << 24, "INVALID_DATES": 1 << 25,
    "ERROR_FOR_DIVISION_BY_ZERO": 1 << 26, "TRADITIONAL": 1 << 27, "HIGH_NOT_PRECEDENCE": 1 << 29,
    "NO_ENGINE_SUBSTITUTION": 1 << 30, "PAD_CHAR_TO_FULL_LENGTH": 1 << 31, "TIME_TRUNCATE_FRACTIONAL": 1 << 32,
    "REAL_AS_FLOAT": 1 << 34,
}  # fmt: skip
_SQL_MODE_COMBINED = {
    "ANSI": ("REAL_AS_FLOAT", "PIPES_AS_CONCAT", "ANSI_QUOTES", "IGNORE_SPACE", "ONLY_FULL_GROUP_BY"),
    "TRADITIONAL": ("STRICT_TRANS_TABLES", "STRICT_ALL_TABLES", "NO_ZERO_IN_DATE", "NO_ZERO_DATE",
                    "ERROR_FOR_DIVISION_BY_ZERO", "NO_ENGINE_SUBSTITUTION"),
}  # fmt: skip


def sql_mode_text(text: str) -> str:
    """`sql_mode` as Doris stores it: the named modes (or a number of mode bits) of a
    comma-separated list, ANSI/TRADITIONAL expanded, listed once each in name order; an unknown
    mode is MySQL's 1231. (`concat(@@sql_mode, ',STRICT_TRANS_TABLES')` from an empty mode
    starts with a comma: empty items are skipped.)"""
    bits = 0
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if item.isdigit():
            value = int(item)
        else:
            value = _SQL_MODE_BITS.get(item.upper(), 0)
            if not value:
                raise GaleneError(f"Variable 'sql_mode' can't be set to the value of '{item}'", ER_WRONG_VALUE_FOR_VAR)
        for combined, implied in _SQL_MODE_COMBINED.items():
            if value & _SQL_MODE_BITS[combined]:
                value |= sum(_SQL_MODE_BITS[m] for m in implied)
        if value & ~sum(_SQL_MODE_BITS.values()):
            raise GaleneError(f"Variable 'sql_mode' can't be set to the value of '{item}'", ER_WRONG_VALUE_FOR_VAR)
        bits |= value
    return ",".join(name for name in sorted(_SQL_MODE_BITS) if bits & _SQL_MODE_BITS[name])


def display_value(value: Any) -> str:
    """How SHOW VARIABLES prints a value."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)

