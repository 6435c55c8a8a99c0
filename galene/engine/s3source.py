"""The S3 table function on the engine: a Python data source whose tasks read object-store files.

Owns `GaleneS3Source` (`spark.read.format("galene_s3")`, a `pyspark.sql.datasource.DataSource`,
registered per session with `spark.dataSource.register`; Apache Spark and Sail both run it),
the file formats of Doris' S3 TVF (csv, csv_with_names, csv_with_names_and_types, json,
parquet; compressed or not) parsed into Arrow, schema inference from the first file (CSV
columns are `c1, c2, …` as in Doris; JSON columns are the first object's keys; CSV and JSON
values are strings — a JSON value's text is the stream load's, `galene.load.json_text` —,
Parquet keeps its types), and the packing of many small files into few partitions.

The FE lists the files (through `galene.load.objectstore`, with deadlines) and hands the
list to the source; the engine's tasks read them through the same IO layer, so every open and
every read in a task has a timer-driven deadline too (no Hadoop S3 connector exists offline,
and an engine reading s3:// by itself would not honour them). No data row passes through the FE.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from galene.common.errors import AnalysisError, GaleneError
from galene.load.json_text import EXACT_JSON, json_value_text
from galene.load.objectstore import FileEntry, ObjectStore, ObjectStoreError, SourceSpec

log = logging.getLogger(__name__)

SOURCE_NAME = "galene_s3"
# Packing: a partition takes consecutive files up to this many bytes or files.
PARTITION_BYTES = 64 << 20
PARTITION_FILES = 1000
# Files a task reads at once (object stores answer small reads with latency, not bandwidth).
READ_CONCURRENCY = 8
# A task hands the engine batches of at least this many rows (small files are joined).
BATCH_ROWS = 64 * 1024
SCHEMA_PROBE_BYTES = 1 << 20
NULL_TEXT = "\\N"


class MalformedFile(GaleneError):
    """A file that cannot be read in its format; the message names the file."""


def _malformed(spec: SourceSpec, name: str, detail: str) -> MalformedFile:
    detail = detail.strip().replace("\n", " ")[:400]
    return MalformedFile(f"[DATA_QUALITY_ERROR]malformed {spec.format} file {spec.display(name)}: {detail}")


# --- formats ---------------------------------------------------------------------------------
_CODECS = {"gz": "gzip", "gzip": "gzip", "bz2": "bz2", "zstd": "zstd", "lz4": "lz4", "lz4frame": "lz4"}
_SUFFIX_CODECS = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd", ".lz4": "lz4"}


def _inflate(spec: SourceSpec, name: str, data: bytes) -> bytes:
    codec = _CODECS.get(spec.compress_type)
    if codec is None and not spec.compress_type:
        codec = next((c for suffix, c in _SUFFIX_CODECS.items() if name.endswith(suffix)), None)
    if codec is None or spec.format == "parquet":
        return data
    try:
        with pa.CompressedInputStream(pa.BufferReader(data), codec) as stream:
            return stream.read()
    except Exception as e:  # noqa: BLE001 - any codec failure means a bad file
        raise _malformed(spec, name, f"cannot decompress ({codec}): {e}") from None


def _skip_rows(spec: SourceSpec) -> int:
    header = {"csv_with_names": 1, "csv_with_names_and_types": 2}.get(spec.format, 0)
    return spec.skip_lines + header


def _csv_table(spec: SourceSpec, name: str, data: bytes, names: list[str] | None) -> pa.Table:
    import pyarrow.csv as pacsv

    sep, delim = spec.column_separator, spec.line_delimiter
    if len(sep.encode()) != 1 or delim not in ("\n", "\r\n"):
        return _csv_table_slow(spec, name, data, names)
    read = pacsv.ReadOptions(
        column_names=names,
        autogenerate_column_names=names is None,
        skip_rows=_skip_rows(spec),
        use_threads=False,
        block_size=max(1 << 20, min(len(data) + 1, 64 << 20)),
    )
    parse = pacsv.ParseOptions(
        delimiter=sep,
        quote_char=spec.enclose or False,
        escape_char=spec.escape or False,
        newlines_in_values=bool(spec.enclose),
    )
    convert = pacsv.ConvertOptions(
        column_types={n: pa.string() for n in names} if names else None,
        null_values=[NULL_TEXT],
        strings_can_be_null=True,
        quoted_strings_can_be_null=False,
    )
    try:
        table = pacsv.read_csv(pa.BufferReader(data), read_options=read, parse_options=parse, convert_options=convert)
    except pa.ArrowInvalid as e:
        if "Empty CSV file" in str(e):
            return pa.table({n: pa.array([], pa.string()) for n in names or []})
        raise _malformed(spec, name, str(e)) from None
    if names is None:  # schema inference: every column is text
        table = table.rename_columns([f"c{i + 1}" for i in range(table.num_columns)])
        table = table.cast(pa.schema([(n, pa.string()) for n in table.column_names]))
    if spec.trim_double_quotes:
        table = pa.table(
            [pc.replace_substring_regex(c, r'^"(.*)"$', r"\1") for c in table.columns], names=table.column_names
        )
    return table


def _csv_table_slow(spec: SourceSpec, name: str, data: bytes, names: list[str] | None) -> pa.Table:
    """Multi-character separators or custom line delimiters: split in Python."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _malformed(spec, name, f"not UTF-8: {e}") from None
    lines = text.split(spec.line_delimiter)
    if lines and lines[-1] == "":
        lines.pop()
    rows = [line.split(spec.column_separator) for line in lines[_skip_rows(spec) :]]
    width = len(names) if names is not None else (len(rows[0]) if rows else 0)
    for i, row in enumerate(rows):
        if len(row) != width:
            raise _malformed(spec, name, f"Expected {width} columns, got {len(row)} at row {i + 1}")
    cols = names or [f"c{i + 1}" for i in range(width)]
    arrays = [pa.array([None if r[j] == NULL_TEXT else r[j] for r in rows], pa.string()) for j in range(width)]
    return pa.table(arrays, names=cols)


def _json_docs(spec: SourceSpec, name: str, data: bytes) -> list:
    def descend(doc):
        for step in [s for s in spec.json_root.removeprefix("$").split(".") if s]:
            doc = doc.get(step) if isinstance(doc, dict) else None
        return doc

    try:
        if spec.read_json_by_line and not spec.strip_outer_array:
            docs = []
            for no, line in enumerate(data.splitlines(), 1):
                if line.strip():
                    try:
                        docs.append(descend(EXACT_JSON.decode(line)))
                    except msgspec.DecodeError as e:
                        raise _malformed(spec, name, f"invalid JSON at line {no}: {e}") from None
            return docs
        doc = descend(EXACT_JSON.decode(data))
    except msgspec.DecodeError as e:
        raise _malformed(spec, name, f"invalid JSON: {e}") from None
    if spec.strip_outer_array:
        if not isinstance(doc, list):
            raise _malformed(spec, name, "strip_outer_array is true but the document is not an array")
        return doc
    return doc if isinstance(doc, list) else [doc]


def _json_table(spec: SourceSpec, name: str, data: bytes, names: list[str] | None) -> pa.Table:
    docs = _json_docs(spec, name, data)
    if names is None:
        first = next((d for d in docs if isinstance(d, dict)), None)
        if first is None:
            raise _malformed(spec, name, "no JSON object to take column names from")
        names = list(first)
    for i, d in enumerate(docs):
        if not isinstance(d, dict):
            raise _malformed(spec, name, f"row {i + 1} is not a JSON object")
    return pa.table({n: pa.array([json_value_text(d.get(n)) for d in docs], pa.string()) for n in names})


def _parquet_table(spec: SourceSpec, name: str, data: bytes, schema: pa.Schema | None) -> pa.Table:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(pa.BufferReader(data))
    except Exception as e:  # noqa: BLE001 - whatever pyarrow says about a bad file
        raise _malformed(spec, name, str(e)) from None
    if schema is None:
        return table.cast(spark_compatible(table.schema))
    cols = []
    for field in schema:
        if field.name in table.column_names:
            col = table.column(field.name)
            try:
                cols.append(col.cast(field.type, safe=False) if col.type != field.type else col)
            except Exception as e:  # noqa: BLE001 - a value the column's type cannot take
                raise _malformed(spec, name, f"column {field.name}: {e}") from None
        else:
            cols.append(pa.nulls(table.num_rows, field.type))
    return pa.table(cols, schema=schema)


def spark_compatible(schema: pa.Schema) -> pa.Schema:
    """Parquet types as the engine takes them (nanosecond and zoned timestamps become
    microseconds; anything without a Spark type becomes text)."""
    fields = []
    for f in schema:
        t = f.type
        if pa.types.is_timestamp(t):
            t = pa.timestamp("us", tz=t.tz)
        elif pa.types.is_large_string(t) or pa.types.is_dictionary(t):
            t = pa.string()
        elif not (
            pa.types.is_integer(t) and not pa.types.is_unsigned_integer(t)
            or pa.types.is_floating(t)
            or pa.types.is_boolean(t)
            or pa.types.is_string(t)
            or pa.types.is_binary(t)
            or pa.types.is_date32(t)
            or pa.types.is_decimal(t)
        ):
            t = pa.string() if not pa.types.is_unsigned_integer(t) else pa.int64()
        fields.append(pa.field(f.name, t))
    return pa.schema(fields)


def parse_file(spec: SourceSpec, name: str, data: bytes, schema: pa.Schema | None) -> pa.Table:
    """One file's rows in `schema` (None: in the schema the file itself gives)."""
    data = _inflate(spec, name, data)
    names = None if schema is None else schema.names
    if spec.format == "parquet":
        return _parquet_table(spec, name, data, schema)
    if spec.format == "json":
        return _json_table(spec, name, data, names)
    return _csv_table(spec, name, data, names)


def infer_schema(store: ObjectStore, first: FileEntry) -> pa.Schema:
    """The source's columns, from its first file (Doris' TVF does the same)."""
    spec = store.spec
    compressed = spec.compress_type or any(first.name.endswith(s) for s in _SUFFIX_CODECS)
    whole = spec.format == "parquet" or compressed or (spec.format == "json" and not spec.read_json_by_line)
    whole = whole or spec.strip_outer_array
    data = store.read(first.name) if whole else store.read_prefix(first.name, SCHEMA_PROBE_BYTES)
    if not whole and len(data) >= SCHEMA_PROBE_BYTES:
        # Only complete lines: the last one may be cut.
        data = data[: data.rfind(spec.line_delimiter.encode()) + 1] if spec.format != "json" else data[: data.rfind(b"\n") + 1]
    if spec.format in ("csv_with_names", "csv_with_names_and_types"):
        return _header_schema(spec, first.name, data)
    table = parse_file(spec, first.name, data, None)
    if table.num_columns == 0:
        raise AnalysisError(f"The first file {spec.display(first.name)} has no columns")
    return table.schema if spec.format == "parquet" else pa.schema([(n, pa.string()) for n in table.column_names])


def _header_schema(spec: SourceSpec, name: str, data: bytes) -> pa.Schema:
    data = _inflate(spec, name, data)
    lines = data.decode("utf-8", "replace").split(spec.line_delimiter)
    if len(lines) <= spec.skip_lines:
        raise _malformed(spec, name, "no header line")
    header = [h.strip().strip('"') for h in lines[spec.skip_lines].split(spec.column_separator)]
    return pa.schema([(h, pa.string()) for h in header])


# --- the data source -------------------------------------------------------------------------
def pack(files: list[FileEntry], max_bytes: int = PARTITION_BYTES, max_files: int = PARTITION_FILES) -> list[list[FileEntry]]:
    """Consecutive files grouped into partitions of at most `max_bytes` / `max_files`."""
    parts: list[list[FileEntry]] = []
    current: list[FileEntry] = []
    size = 0
    for f in files:
        if current and (size + f.size > max_bytes or len(current) >= max_files):
            parts.append(current)
            current, size = [], 0
        current.append(f)
        size += f.size
    if current:
        parts.append(current)
    return parts


def spark_ddl(schema: pa.Schema) -> str:
    return ", ".join(f"`{f.name.replace('`', '``')}` {_spark_type(f.type)}" for f in schema)


def _spark_type(t: pa.DataType) -> str:
    if pa.types.is_int8(t):
        return "TINYINT"
    if pa.types.is_int16(t):
        return "SMALLINT"
    if pa.types.is_int32(t):
        return "INT"
    if pa.types.is_integer(t):
        return "BIGINT"
    if pa.types.is_float32(t):
        return "FLOAT"
    if pa.types.is_floating(t):
        return "DOUBLE"
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_date32(t):
        return "DATE"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP" if t.tz else "TIMESTAMP_NTZ"
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    if pa.types.is_binary(t):
        return "BINARY"
    return "STRING"


def _source_classes():
    """Defined on first use: importing pyspark.sql.datasource pulls in pandas/py4j helpers the
    FE's other paths do not need."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class FilesPartition(InputPartition):
        def __init__(self, files: list):
            super().__init__(files)
            self.files = files

    class Reader(DataSourceReader):
        def __init__(self, options):
            self.spec = msgspec.json.decode(options["spec"], type=SourceSpec)
            self.parts = msgspec.json.decode(options["partitions"], type=list[list[FileEntry]])
            self.schema_bytes = bytes.fromhex(options["arrow_schema"])

        def partitions(self):
            return [FilesPartition([(f.name, f.size) for f in p]) for p in self.parts]

        def read(self, partition):
            schema = pa.ipc.read_schema(pa.py_buffer(self.schema_bytes))
            yield from read_files(self.spec, [FileEntry(n, s) for n, s in partition.files], schema)

    class GaleneS3Source(DataSource):
        @classmethod
        def name(cls):
            return SOURCE_NAME

        def schema(self):
            return self.options["spark_schema"]

        def reader(self, schema):
            return Reader(self.options)

    return GaleneS3Source


def read_files(spec: SourceSpec, files: list[FileEntry], schema: pa.Schema):
    """A task's files as Arrow batches in `schema`, in name order; several reads in flight."""
    store = ObjectStore(spec)
    pending: list[pa.Table] = []
    rows = 0
    with ThreadPoolExecutor(READ_CONCURRENCY, thread_name_prefix="galene-s3-read") as pool:
        for start in range(0, len(files), 4 * READ_CONCURRENCY):
            window = files[start : start + 4 * READ_CONCURRENCY]
            for f, data in zip(window, pool.map(lambda f: store.read(f.name), window), strict=True):
                table = parse_file(spec, f.name, data, schema)
                if table.num_rows:
                    pending.append(table)
                    rows += table.num_rows
                if rows >= BATCH_ROWS:
                    yield from pa.concat_tables(pending).combine_chunks().to_batches()
                    pending, rows = [], 0
    if pending:
        yield from pa.concat_tables(pending).combine_chunks().to_batches()


_registered: dict[int, object] = {}
_register_lock = threading.Lock()


def ensure_registered(spark) -> None:
    """Register the source with this session once (sessions are replaced after an engine death)."""
    with _register_lock:
        if _registered.get(id(spark)) is spark:
            return
        spark.dataSource.register(_source_classes())
        _registered[id(spark)] = spark


def source_frame(spark, spec: SourceSpec, files: list[FileEntry], schema: pa.Schema):
    """A DataFrame over `files` (already listed by the FE) with `schema`."""
    ensure_registered(spark)
    ddl = spark_ddl(schema)
    return (
        spark.read.format(SOURCE_NAME)
        .schema(ddl)
        .option("spec", msgspec.json.encode(spec).decode())
        .option("partitions", msgspec.json.encode(pack(files)).decode())
        .option("arrow_schema", schema.serialize().to_pybytes().hex())
        .option("spark_schema", ddl)
        .load()
    )


def plan_source(spec: SourceSpec, files: list[FileEntry] | None = None) -> tuple[list[FileEntry], pa.Schema]:
    """The FE's part of a read: list the files (unless given) and infer the schema from the
    first; deadlines on both. No files: Doris' error."""
    store = ObjectStore(spec)
    if files is None:
        files = store.list()
    if not files:
        raise AnalysisError(f"Can not get first file, please check uri: {spec.uri}")
    return files, infer_schema(store, files[0])


__all__ = [
    "MalformedFile",
    "ObjectStoreError",
    "ensure_registered",
    "infer_schema",
    "pack",
    "parse_file",
    "plan_source",
    "read_files",
    "source_frame",
    "spark_ddl",
]
