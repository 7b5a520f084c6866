"""A Spark standalone cluster on this host: a master and N workers, each a JVM of its own, started with the
`spark-class` launcher PySpark installs; the workers start each application's executors in JVMs of their
own. For running the connector beyond one JVM in tests and benchmarks, and by hand:

    PYTHONPATH=.:client python -m bench.spark_standalone --workers 2   # Ctrl-C stops it

A driver reaches it with `local_session(name, master=cluster.master_url)`; its executors run the Python
workers with the driver's interpreter (PYSPARK_PYTHON), so `spark_io` must be installed there.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from cli.node_processes import free_ports, wait_until

START_TIMEOUT_S = 90.0
HOST = "127.0.0.1"


def spark_class() -> str:
    """The `spark-class` launcher beside this interpreter (PySpark installs it), else on PATH."""
    beside = Path(sys.executable).parent / "spark-class"
    found = str(beside) if beside.exists() else shutil.which("spark-class")
    if found is None:
        raise FileNotFoundError("no spark-class launcher: install PySpark (pip install 'quorumq[spark]')")
    return found


def _environment() -> dict[str, str]:
    """This process's environment with PYTHONPATH's entries made absolute: executors, and their Python
    workers, run in directories of their own."""
    paths = os.environ.get("PYTHONPATH")
    if not paths:
        return dict(os.environ)
    absolute = [str(Path(entry).resolve()) for entry in paths.split(os.pathsep) if entry]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(absolute)}


@dataclass
class StandaloneCluster:
    """A running master (`master_url`, its web UI at `web_url`) and its workers, logs under `work`."""

    master_url: str
    web_url: str
    work: Path
    processes: list[subprocess.Popen] = field(default_factory=list)

    @classmethod
    def start(cls, work: Path, workers: int = 2, cores: int = 1, memory: str = "1g") -> StandaloneCluster:
        """Start a master and `workers` workers of `cores` cores and `memory` each; return once the master
        counts every worker alive."""
        work.mkdir(parents=True, exist_ok=True)
        port, web_port = free_ports(2, HOST)
        cluster = cls(f"spark://{HOST}:{port}", f"http://{HOST}:{web_port}", work)
        try:
            cluster._launch(
                "master",
                "org.apache.spark.deploy.master.Master",
                "--host",
                HOST,
                "--port",
                str(port),
                "--webui-port",
                str(web_port),
            )
            for n in range(1, workers + 1):
                cluster._launch(
                    f"worker{n}", "org.apache.spark.deploy.worker.Worker", "--host", HOST,
                    "--cores", str(cores), "--memory", memory, "--webui-port", "0",
                    "--work-dir", str(work / f"worker{n}"), cluster.master_url,
                )  # fmt: skip
            wait_until(
                lambda: cluster.alive_workers() == workers, START_TIMEOUT_S, f"{workers} Spark workers"
            )
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def _launch(self, name: str, main_class: str, *arguments: str) -> None:
        command = [spark_class(), main_class, *arguments]
        with (self.work / f"{name}.log").open("wb") as log:  # the child keeps its own descriptor
            self.processes.append(
                subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=_environment())
            )

    def state(self) -> dict:
        """The master's view of the cluster (its web UI's JSON: workers, applications)."""
        with urllib.request.urlopen(f"{self.web_url}/json/", timeout=5) as answer:
            return json.load(answer)

    def alive_workers(self) -> int:
        try:
            return int(self.state()["aliveworkers"])
        except (OSError, ValueError):  # not listening yet, or its UI just up answered a page, not JSON
            return 0

    def stop(self) -> None:
        """Stop the workers (and with them their executors), then the master."""
        for process in reversed(self.processes):
            process.terminate()
        for process in reversed(self.processes):
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cores", type=int, default=1, help="cores per worker")
    parser.add_argument("--memory", default="1g", help="memory per worker")
    parser.add_argument(
        "--work", type=Path, default=Path("spark-standalone"), help="logs and work directories"
    )
    args = parser.parse_args()
    cluster = StandaloneCluster.start(args.work, args.workers, args.cores, args.memory)
    print(f"master {cluster.master_url} (web UI {cluster.web_url}); Ctrl-C stops it", flush=True)
    try:
        while all(process.poll() is None for process in cluster.processes):
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
