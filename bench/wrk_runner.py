"""quorumq's JSON contract driven by wrk (C, one event loop per thread): one message per POST.

A Python client spends more CPU per request than a node does; wrk spends almost none, so the
one-message-per-request workload measures the cluster, not the client. One wrk process with a thread
per node (thread i sends to node i) and `publishers` connections in all, each with one request in
flight; its Lua script reports counts and latency percentiles as one JSON line. wrk gives each thread
an equal share of the connections, so the publishers are rounded down to a multiple of the nodes.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import tempfile
from urllib.parse import urlsplit

from bench.child_report import child_report
from bench.driver_quorumq import QuorumqDriver
from bench.specs import Publish, Spec
from bench.workloads import WorkloadResult

TIMEOUT_S = 30
SCRIPT = """
local nodes = {%(nodes)s}
local index = 0
wrk.method = "POST"
wrk.body = '{"messages": [{"body": "' .. string.rep("x", %(size)d) .. '"}]}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Basic %(credentials)s"
setup = function(thread)
  index = index + 1
  local host, port = nodes[(index - 1) %% #nodes + 1]:match("([^:]+):(%%d+)")
  thread.addr = wrk.lookup(host, port)[1]
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests": %%d, "seconds": %%f, "failures": %%d, "p50": %%d, "p99": %%d, "p999": %%d}\\n',
    summary.requests, summary.duration / 1e6, e.connect + e.read + e.write + e.status + e.timeout,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9)))
end
"""


def ensure_wrk() -> None:
    """Install Debian's wrk when it is missing."""
    if not shutil.which("wrk"):
        subprocess.run(["apt-get", "update", "-q"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], check=True)


class WrkRunner:
    """One-message publishes over the JSON contract, `publishers` connections spread over the nodes."""

    client = "wrk, JSON"

    def __init__(self, urls: list[str], credentials: str = "guest:guest") -> None:
        ensure_wrk()
        self.urls = urls
        self.credentials = credentials
        version = subprocess.run(["wrk", "-v"], capture_output=True, text=True).stdout.split(" [")[0]
        self.description = (
            f"{version.strip()} (C), POST /api/queues/{{q}}/messages with one JSON message per request, "
            "one request in flight per connection, connections spread over the nodes"
        )

    def supports(self, spec: Spec) -> bool:
        return isinstance(spec, Publish) and spec.in_flight == 1 and spec.spread

    async def setup(self, spec: Spec) -> None:
        assert isinstance(spec, Publish)
        await QuorumqDriver(self.urls).declare(spec.queue)

    async def run(self, spec: Spec) -> WorkloadResult:
        assert isinstance(spec, Publish)
        threads = min(len(self.urls), spec.publishers)
        connections = spec.publishers - spec.publishers % threads
        nodes = ", ".join(f'"{urlsplit(url).netloc}"' for url in self.urls)
        credentials = base64.b64encode(self.credentials.encode()).decode()
        script = SCRIPT % {"nodes": nodes, "size": spec.body_size, "credentials": credentials}
        with tempfile.NamedTemporaryFile("w", suffix=".lua") as lua:
            lua.write(script)
            lua.flush()
            argv = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{max(1, round(spec.duration))}s"]
            argv += [f"--timeout={TIMEOUT_S}s", "-s", lua.name]
            argv.append(f"{self.urls[0]}/api/queues/{spec.queue}/messages")
            report = await child_report(argv, "wrk")
        percentiles = {key: report[key] / 1000 for key in ("p50", "p99", "p999")}
        return WorkloadResult(report["requests"], report["seconds"], latency_summary_ms=percentiles)
