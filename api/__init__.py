"""The HTTP API: aiohttp application factory, handlers, error mapping. Imports cluster.

Its client is the separate `quorumq` package (client/, distribution quorumq-client).
"""
