"""A Flask app that publishes orders through one module-level SyncClient, served by gunicorn with
`--preload`: the app (and so the client) is created once in the gunicorn master, which then forks its
workers.

    QUORUMQ_NODES=http://127.0.0.1:8080,http://127.0.0.1:8081 \\
        gunicorn --preload --workers 4 --bind 127.0.0.1:8000 --chdir examples flask_orders:app
    curl -X POST -H 'Content-Type: application/json' --data '{"order": "o-1"}' http://127.0.0.1:8000/orders

The master declares the queue at import, through the client. A worker's first request finds the client
created in another process and builds the worker's own loop thread, HTTP session and publisher id (see
docs/use/client.md); each answer names the worker and its publisher id to show it.
"""

from __future__ import annotations

import atexit
import json
import os

from flask import Flask, Response, jsonify, request

from quorumq import QuorumqError, SyncClient

QUEUE = os.environ.get("ORDERS_QUEUE", "orders")

client = SyncClient(os.environ.get("QUORUMQ_NODES", "http://127.0.0.1:8080").split(","))
client.declare(QUEUE)
atexit.register(client.close)  # in each worker too: it closes what that process built

app = Flask(__name__)


@app.post("/orders")
def place_order() -> tuple[Response, int]:
    """Publish the JSON order; 201 with its message id once a majority of the queue's replicas has it."""
    order = request.get_json(silent=True)
    if not isinstance(order, dict):
        return jsonify(error="bad_request", reason="the body must be a JSON object"), 400
    try:
        [message_id] = client.publish(QUEUE, json.dumps(order))
    except QuorumqError as exc:
        return jsonify(error=exc.code, reason=exc.reason), 503
    return jsonify(id=message_id, worker=os.getpid(), publisher=client.publisher_id), 201
