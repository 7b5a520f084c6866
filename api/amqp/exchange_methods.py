"""A channel's exchange and binding methods (`exchange.declare`, `delete`, `bind`, `unbind`;
`queue.bind`, `unbind`) with RabbitMQ's semantics, through the node's HTTP API (`NodeCalls`), which
holds every rule: reserved `amq.*` names, the default exchange, an inequivalent redeclare, `if-unused`,
and a missing exchange or queue are its refusals, in the reply codes RabbitMQ gives them.

Where RabbitMQ answers without complaint what quorumq's HTTP API answers 404, the method succeeds here
too: deleting an exchange that does not exist, and removing a binding that does not exist between an
exchange and a queue (or exchange) that both do.
"""

from __future__ import annotations

from pamqp import commands
from pamqp.base import Frame

from api.amqp.node_calls import NodeCalls
from api.amqp.properties import json_table
from api.amqp.reply_codes import NOT_FOUND, AmqpError
from metadata_state.records import EXCHANGE_DESTINATION, QUEUE_DESTINATION, BindingRecord


class ExchangeMethods:
    """The exchange and binding methods of one channel, for the user `node` acts for."""

    def __init__(self, node: NodeCalls) -> None:
        self._node = node

    async def declare(self, method: commands.Exchange.Declare) -> Frame:
        """`exchange.declare`: passive asks whether it exists (NOT_FOUND), else declares it."""
        if method.passive:
            await self._node.check_exchange(method.exchange)
        else:
            await self._node.declare_exchange(
                method.exchange,
                method.exchange_type,
                method.durable,
                method.auto_delete,
                method.internal,
                json_table(method.arguments),
            )
        return commands.Exchange.DeclareOk()

    async def delete(self, method: commands.Exchange.Delete) -> Frame:
        """`exchange.delete`, with its bindings; delete-ok for an exchange that does not exist, as
        RabbitMQ 3.x answers it."""
        try:
            await self._node.delete_exchange(method.exchange, method.if_unused)
        except AmqpError as exc:
            if exc.code != NOT_FOUND:
                raise
        return commands.Exchange.DeleteOk()

    async def bind_queue(self, method: commands.Queue.Bind) -> Frame:
        await self._node.bind(
            _binding(self._node.vhost, method.exchange, QUEUE_DESTINATION, method.queue, method)
        )
        return commands.Queue.BindOk()

    async def unbind_queue(self, method: commands.Queue.Unbind) -> Frame:
        await self._unbind(
            _binding(self._node.vhost, method.exchange, QUEUE_DESTINATION, method.queue, method)
        )
        return commands.Queue.UnbindOk()

    async def bind_exchange(self, method: commands.Exchange.Bind) -> Frame:
        await self._node.bind(
            _binding(self._node.vhost, method.source, EXCHANGE_DESTINATION, method.destination, method)
        )
        return commands.Exchange.BindOk()

    async def unbind_exchange(self, method: commands.Exchange.Unbind) -> Frame:
        await self._unbind(
            _binding(self._node.vhost, method.source, EXCHANGE_DESTINATION, method.destination, method)
        )
        return commands.Exchange.UnbindOk()

    async def _unbind(self, binding: BindingRecord) -> None:
        """Remove `binding`: one that does not exist is removed already, as RabbitMQ has it, once its
        source and destination are found (NOT_FOUND for the one that is not)."""
        try:
            await self._node.unbind(binding)
        except AmqpError as exc:
            if exc.code != NOT_FOUND:
                raise
            await self._node.check_exchange(binding.source)
            if binding.destination_type == QUEUE_DESTINATION:
                await self._node.counts(binding.destination)
            else:
                await self._node.check_exchange(binding.destination)


def _binding(
    vhost: str,
    source: str,
    kind: str,
    destination: str,
    method: commands.Queue.Bind | commands.Queue.Unbind | commands.Exchange.Bind | commands.Exchange.Unbind,
) -> BindingRecord:
    """The binding a bind or unbind names, its arguments (`x-match` and a headers binding's tests) as
    quorumq keeps them."""
    return BindingRecord(vhost, source, destination, kind, method.routing_key, json_table(method.arguments))
