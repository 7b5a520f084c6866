"""RabbitMQ through its Java AMQP client: bench/java/Bench.java, compiled here and run once per workload.

Debian's `librabbitmq-client-java` (amqp-client 5) and a JDK are installed with apt-get when missing.
Each run is a JVM of its own (its CPU counts as client CPU through the children's rusage); it writes
its latencies to a file as little-endian doubles (seconds) and prints one JSON line of counts.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from array import array
from pathlib import Path

from bench.child_report import child_report
from bench.specs import Drain, Flow, Publish, Spec
from bench.workloads import WorkloadResult

SOURCE = Path(__file__).resolve().parent / "java" / "Bench.java"
JARS = tuple(f"/usr/share/java/{jar}" for jar in ("amqp-client.jar", "slf4j-api.jar", "slf4j-nop.jar"))
DEBIAN_PACKAGES = ("librabbitmq-client-java", "libslf4j-java", "openjdk-17-jdk-headless")


def ensure_java_client() -> None:
    """Install the JDK and RabbitMQ's Java client from Debian when either is missing."""
    if shutil.which("javac") and all(Path(jar).exists() for jar in JARS):
        return
    subprocess.run(["apt-get", "update", "-q"], check=True)
    subprocess.run(["apt-get", "install", "-y", "-q", *DEBIAN_PACKAGES], check=True)


def compile_bench(build_dir: Path) -> str:
    """Compile Bench.java into `build_dir` and return the class path to run it with."""
    ensure_java_client()
    build_dir.mkdir(parents=True, exist_ok=True)
    classpath = ":".join(JARS)
    subprocess.run(["javac", "-d", str(build_dir), "-cp", classpath, str(SOURCE)], check=True)
    return f"{build_dir}:{classpath}"


class JavaRunner:
    """Runs specs against a RabbitMQ cluster with Bench.java, one JVM per step."""

    client = "Java client"

    def __init__(self, urls: list[str], build_dir: Path) -> None:
        self.urls = [url.rstrip("/") for url in urls]  # the Java client reads a bare "/" as vhost ""
        self.classpath = compile_bench(build_dir)
        java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[0]
        self.library = f"RabbitMQ Java client (amqp-client 5, Debian), {java}"
        self.description = (
            f"{self.library}; a connection and a confirming channel per publisher or consumer "
            "(bench/java/Bench.java)"
        )

    def supports(self, spec: Spec) -> bool:
        return True

    async def _java(self, mode: str, **options: object) -> WorkloadResult:
        """Run Bench.java in `mode`; raise when it failed or reported failed messages."""
        with tempfile.NamedTemporaryFile(prefix="bench-latencies-") as latencies:
            argv = ["java", "-cp", self.classpath, "Bench", mode, "--uris", ",".join(self.urls)]
            argv += ["--latencies", latencies.name]
            for name, value in options.items():
                if value is True:
                    argv.append(f"--{name.replace('_', '-')}")
                elif value not in (None, False):
                    argv += [f"--{name.replace('_', '-')}", str(value)]
            report = await child_report(argv, f"Bench.java {mode}")
            samples = array("d")
            samples.frombytes(Path(latencies.name).read_bytes())
        return WorkloadResult(report["messages"], report["seconds"], samples.tolist())

    async def setup(self, spec: Spec) -> None:
        if isinstance(spec, Publish):
            await self._java("declare", queue=spec.queue)
        if isinstance(spec, Drain):
            await self.fill(spec.queue, spec.count, spec.body_size)
        if isinstance(spec, Flow):
            for index in range(spec.queues):
                await self._java("declare", queue=f"bench-flow-{index}", home=index)

    async def run(self, spec: Spec) -> WorkloadResult:
        if isinstance(spec, Publish):
            return await self._java(
                "publish",
                queue=spec.queue,
                size=spec.body_size,
                duration=spec.duration,
                publishers=spec.publishers,
                in_flight=spec.in_flight,
                spread=spec.spread,
            )
        if isinstance(spec, Drain):
            return await self._java("drain", queue=spec.queue, count=spec.count, prefetch=spec.prefetch)
        return await self._java(
            "flow",
            queues=spec.queues,
            size=spec.body_size,
            duration=spec.duration,
            in_flight=spec.in_flight,
            prefetch=spec.prefetch,
            rate=spec.rate,
        )

    async def declare_many(self, prefix: str, count: int, channels: int, deadline: float) -> WorkloadResult:
        """Declare quorum queues `prefix`0..`count`-1 (queue i through node i mod n), `channels` at once,
        taking no new one after `deadline` seconds; the result counts the queues declared, `prefix`0 on
        without a gap, and the seconds after the connections were open."""
        return await self._java(
            "declare-many", prefix=prefix, queues=count, channels=channels, deadline=deadline
        )

    async def publish_each(
        self, prefix: str, count: int, channels: int, body_size: int, deadline: float
    ) -> WorkloadResult:
        """One confirmed message of `body_size` bytes to each of those queues, likewise."""
        return await self._java(
            "publish-each", prefix=prefix, queues=count, channels=channels, size=body_size, deadline=deadline
        )

    async def fill(self, queue: str, count: int, body_size: int) -> None:
        """Declare `queue` afresh on node 0 and put `count` confirmed messages in it."""
        await self._java("declare", queue=queue)
        await self._java("fill", queue=queue, count=count, size=body_size)
