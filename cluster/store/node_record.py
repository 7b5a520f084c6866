"""The node's record in its data directory (`node.json`): whose directory it is, and the seeds of its
first start or the URL it joined through. Later starts follow the record and ignore those flags."""

from __future__ import annotations

import json
from pathlib import Path

from cluster.config import Address, NodeConfig
from cluster.store.durable_files import write_durably

NODE_FILE = "node.json"


def load_or_record_seeds(data_dir: Path, config: NodeConfig) -> tuple[dict[str, Address], str | None]:
    """The seeds (by node name) and the join URL this node started with the first time, recorded then
    from `config` (the seeds, else this node alone; none with a join URL: an empty metadata group waits
    for the leader's snapshot and log). SystemExit when the directory belongs to another node or the
    seed list leaves this node out."""
    path = data_dir / NODE_FILE
    if path.exists():
        recorded = json.loads(path.read_text())
        if recorded["node"] != config.node:
            owner = recorded["node"]
            raise SystemExit(f"data dir {data_dir} belongs to node {owner!r}, not {config.node!r}")
        seeds = {n: Address.parse(a, what="seed") for n, a in recorded["seeds"].items()}
        return seeds, recorded.get("join")
    if config.join:
        write_durably(path, json.dumps({"node": config.node, "seeds": {}, "join": config.join}))
        return {}, config.join
    seeds = {s.name: s.raft for s in config.seeds} or {config.node: config.raft_address}
    if config.node not in seeds:
        raise SystemExit(f"the seed list must include this node ({config.node})")
    write_durably(path, json.dumps({"node": config.node, "seeds": {n: str(a) for n, a in seeds.items()}}))
    return seeds, None
