"""The HTTP API (aiohttp application factory, handlers, error mapping) and the asyncio/sync HTTP client.

The server side imports cluster; the client (api.client) imports only aiohttp and the standard library.
"""
