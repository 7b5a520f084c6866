"""Run the whole-node simulation over a range of seeds: `python -m node_simulation --help`.

Hash randomisation is fixed (a set of names is iterated in the order of its hashes), so the runner
starts itself again with PYTHONHASHSEED=0 when it is not already.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

from node_simulation.history import Violation
from node_simulation.simulation import Faults, NodeSimulation, SimStats, quiet_logs


def main() -> int:
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.execve(
            sys.executable,
            [sys.executable, "-m", "node_simulation", *sys.argv[1:]],
            {**os.environ, "PYTHONHASHSEED": "0"},
        )
    parser = argparse.ArgumentParser(prog="python -m node_simulation", description=__doc__)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=20.0, help="virtual seconds of faults per seed")
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument(
        "--no-churn",
        action="store_true",
        help="no spare node joins or is forgotten, and no node stops gracefully (seeds run as before them)",
    )
    parser.add_argument(
        "--no-stops",
        action="store_true",
        help="no node stops gracefully (seeds run as before graceful stops)",
    )
    parser.add_argument(
        "--json", action="store_true", help="end with one JSON line: the faults and what the clients did"
    )
    args = parser.parse_args()
    quiet_logs()
    total = SimStats()
    clients: dict[str, int] = {}
    most_filler = 0
    failed: list[int] = []
    started = time.monotonic()
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        faults = (
            Faults(join=0, forget=0, stop=0) if args.no_churn else Faults(stop=0) if args.no_stops else None
        )
        sim = NodeSimulation(seed, args.nodes, faults)
        try:
            total.add(sim.run(args.seconds))
            print(f"seed {seed}: ok ({sim.trace_digest})", flush=True)
            for name, value in vars(sim.clients.stats).items():
                if isinstance(value, int):
                    clients[name] = clients.get(name, 0) + value
            most_filler = max(most_filler, sim.clients.stats.filler_bytes)
        except Violation as exc:
            failed.append(seed)
            print(f"FAILED: {exc}", flush=True)
    took = time.monotonic() - started
    print(f"{args.seeds} seeds, {len(failed)} failed, {took:.1f} s: {total}")
    if failed:
        print("replay one: python -m node_simulation --first-seed S --seeds 1; failed:", failed)
    if args.json:
        summary = {"faults": dataclasses.asdict(total), "clients": clients, "most_filler_bytes": most_filler}
        print(json.dumps({"seeds": args.seeds, "failed": failed, **summary}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
