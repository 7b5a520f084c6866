"""`QuorumqDataSource`: format("quorumq") for readStream, read, writeStream and write."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from spark_io.batch_reader import QuorumqBatchReader
from spark_io.options import SinkOptions, SourceOptions
from spark_io.rows import headers_format, source_schema
from spark_io.sink import QuorumqBatchWriter, QuorumqStreamWriter, routes_by_column
from spark_io.source import QuorumqStreamReader


class QuorumqDataSource(DataSource):
    """A quorumq queue as a Spark streaming source (a durable consumer), a batch source (a browse that
    consumes nothing), and a streaming or batch sink."""

    @classmethod
    def name(cls) -> str:
        return "quorumq"

    def schema(self) -> StructType:
        return source_schema(headers_format(self.options))

    def reader(self, schema: StructType) -> QuorumqBatchReader:
        return QuorumqBatchReader(SourceOptions.parse(self.options))

    def streamReader(self, schema: StructType) -> QuorumqStreamReader:
        return QuorumqStreamReader(SourceOptions.parse(self.options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> QuorumqStreamWriter:
        return QuorumqStreamWriter(SinkOptions.parse(self.options, routes_by_column(schema)))

    def writer(self, schema: StructType, overwrite: bool) -> QuorumqBatchWriter:
        return QuorumqBatchWriter(SinkOptions.parse(self.options, routes_by_column(schema)))
