"""The Doris load library: load options and headers, input bounds, the CSV/JSON/Parquet/ORC/Arrow
readers, Doris type conversion, `columns`/`where` expressions, tablet routing and the segment
writer. Used by the BE (stream load, group commit), the engine (pipelines, compaction) and the FE
(load headers, 2PC); imports no PySpark and no server."""
