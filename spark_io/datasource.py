"""`QuorumqDataSource`: format("quorumq") for readStream, writeStream and write."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from spark_io.options import SinkOptions, SourceOptions
from spark_io.rows import SOURCE_SCHEMA
from spark_io.sink import QuorumqBatchWriter, QuorumqStreamWriter
from spark_io.source import QuorumqStreamReader


class QuorumqDataSource(DataSource):
    """A quorumq queue as a Spark streaming source and a streaming or batch sink."""

    @classmethod
    def name(cls) -> str:
        return "quorumq"

    def schema(self) -> str:
        return SOURCE_SCHEMA

    def streamReader(self, schema: StructType) -> QuorumqStreamReader:
        return QuorumqStreamReader(SourceOptions.parse(self.options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> QuorumqStreamWriter:
        return QuorumqStreamWriter(SinkOptions.parse(self.options))

    def writer(self, schema: StructType, overwrite: bool) -> QuorumqBatchWriter:
        return QuorumqBatchWriter(SinkOptions.parse(self.options))
