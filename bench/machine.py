"""A description of the machine a benchmark ran on: CPU, memory, kernel, load, software versions."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo (the platform's processor string elsewhere)."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def memory_gib() -> str:
    """Total memory from /proc/meminfo, in GiB."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return f"{int(line.split()[1]) / 2**20:.1f} GiB"
    return "unknown"


def load_average() -> str:
    """The 1, 5 and 15 minute load averages."""
    return " / ".join(f"{value:.2f}" for value in os.getloadavg())


def rabbitmq_version() -> str:
    """The installed rabbitmq-server package version, or 'not installed'."""
    if not shutil.which("dpkg-query"):
        return "unknown"
    done = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", "rabbitmq-server"], capture_output=True, text=True
    )
    return done.stdout.strip() if done.returncode == 0 else "not installed"


def describe_machine() -> dict[str, str]:
    """The facts that make a benchmark figure comparable, as label -> value."""
    return {
        "CPU": f"{cpu_model()}, {os.cpu_count()} logical cores",
        "memory": memory_gib(),
        "OS": f"{platform.system()} {platform.release()}",
        "Python": platform.python_version(),
        "RabbitMQ (Debian package)": rabbitmq_version(),
        "load average before the run (1/5/15 min)": load_average(),
    }
