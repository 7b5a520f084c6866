"""Parsing the options of format("quorumq") (no Spark session or cluster needed)."""

from __future__ import annotations

import pytest

from spark_io.option_values import OptionError
from spark_io.options import SinkOptions, SourceOptions

NODES = {"nodes": "http://127.0.0.1:8080, http://127.0.0.1:8081", "queue": "orders"}


def test_max_records_per_batch_is_an_alias_of_max_messages_per_trigger() -> None:
    assert SourceOptions.parse({**NODES, "maxRecordsPerBatch": "7"}).max_messages == 7
    assert (
        SourceOptions.parse({**NODES, "maxMessagesPerTrigger": "7", "maxRecordsPerBatch": "7"}).max_messages
        == 7
    )
    with pytest.raises(OptionError, match="differ"):
        SourceOptions.parse({**NODES, "maxMessagesPerTrigger": "7", "maxRecordsPerBatch": "8"})
    parsed = SourceOptions.parse({**NODES, "maxBytesPerTrigger": "1048576"})
    assert (parsed.max_messages, parsed.max_bytes, parsed.consumer) == (None, 1048576, "spark-orders")
    with pytest.raises(OptionError, match="maxBytesPerTrigger"):
        SourceOptions.parse({**NODES, "maxBytesPerTrigger": "0"})


@pytest.mark.parametrize(
    ("credentials", "complaint"),
    [
        ({"user": "etl", "password": "p", "passwordFile": "/run/secrets/p"}, "not both"),
        ({"user": "etl"}, "needs 'password' or 'passwordFile'"),
        ({"password": "p"}, "needs option 'user'"),
        ({"token": "t", "user": "etl", "password": "p"}, "not both"),
        ({"nodes": " , "}, "lists no address"),
    ],
)
def test_credentials_that_cannot_work_are_refused_when_parsed(
    credentials: dict[str, str], complaint: str
) -> None:
    with pytest.raises(OptionError, match=complaint):
        SinkOptions.parse({**NODES, **credentials})


def test_the_repr_of_options_hides_the_password_and_the_token() -> None:
    with_password = repr(SourceOptions.parse({**NODES, "user": "etl", "password": "hunter2-secret"}))
    with_token = repr(SinkOptions.parse({**NODES, "token": "token-secret-abc"}))
    assert "hunter2-secret" not in with_password and "password='<hidden>'" in with_password
    assert "token-secret-abc" not in with_token and "token='<hidden>'" in with_token
    assert "user='etl'" in with_password


def test_a_password_file_is_read_where_the_client_is_built(tmp_path) -> None:  # type: ignore[no-untyped-def]
    secret = tmp_path / "password"
    options = SinkOptions.parse({**NODES, "user": "etl", "passwordFile": str(secret)})
    with pytest.raises(OptionError, match="no file"):
        options.connection.client_arguments()
    secret.write_text("s3cret\n")
    assert options.connection.client_arguments()["auth"] == ("etl", "s3cret")


def test_since_takes_epoch_milliseconds_or_an_iso_time_and_headers_a_known_format() -> None:
    assert SourceOptions.parse({**NODES, "since": "2024-06-01T00:00:00"}).since_ms == 1717200000000
    assert SourceOptions.parse({**NODES, "since": "2024-06-01T02:00:00+02:00"}).since_ms == 1717200000000
    assert SourceOptions.parse({**NODES, "since": "1717200000000"}).since_ms == 1717200000000
    assert SourceOptions.parse(NODES).headers == "map"
    with pytest.raises(OptionError, match="since"):
        SourceOptions.parse({**NODES, "since": "yesterday"})
    with pytest.raises(OptionError, match="headersFormat"):
        SourceOptions.parse({**NODES, "headersFormat": "xml"})


def test_the_sink_needs_a_queue_option_unless_rows_route_by_their_queue_column() -> None:
    nodes = {"nodes": NODES["nodes"]}
    with pytest.raises(OptionError, match="'queue' is required"):
        SinkOptions.parse(nodes)
    assert SinkOptions.parse(nodes, route=True).queue is None
    with pytest.raises(OptionError, match="publishWindow"):
        SinkOptions.parse({**NODES, "publishWindow": "1000"})
