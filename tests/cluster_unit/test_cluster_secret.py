"""The cluster secret: a node reachable off loopback refuses to start without one of its own; a lone
node on loopback generates one in its data directory."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from cluster.config import ConfigError, NodeConfig, load_config
from cluster.security.cluster_secret import SECRET_FILE, settle_cluster_secret

OWN_SECRET = "9f2c0c5e5d1b4f0e8a7d6c5b4a39281706f5e4d3"


def configured(tmp_path: Path, host: str = "127.0.0.1", **settings: str) -> NodeConfig:
    flags = {"node": "n1", "data_dir": str(tmp_path / "n1"), "http": f"{host}:8080", "raft": f"{host}:8180"}
    return load_config({**flags, **settings})


@pytest.fixture(autouse=True)
def no_secret_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("QUORUMQ_CLUSTER_SECRET", "QUORUMQ_CLUSTER_SECRET_FILE"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", "node1.example"])
def test_a_node_off_loopback_without_a_secret_is_refused(tmp_path: Path, host: str) -> None:
    with pytest.raises(ConfigError, match="QUORUMQ_CLUSTER_SECRET"):
        settle_cluster_secret(configured(tmp_path, host))


@pytest.mark.parametrize("secret", ["quorumq-dev-secret", "change-me-quorumq-compose", "change-me"])
def test_a_published_secret_is_refused_off_loopback(tmp_path: Path, secret: str) -> None:
    with pytest.raises(ConfigError, match="public"):
        settle_cluster_secret(configured(tmp_path, "0.0.0.0", cluster_secret=secret))


@pytest.mark.parametrize(
    "advertised",
    [{"advertise_raft": "node1.example:8180"}, {"advertise_http": "http://10.0.0.1:8080"}],
)
def test_an_address_advertised_off_loopback_counts_as_reachable(tmp_path: Path, advertised: dict) -> None:
    with pytest.raises(ConfigError, match="QUORUMQ_CLUSTER_SECRET"):
        settle_cluster_secret(configured(tmp_path, **advertised))


def test_a_secret_of_its_own_is_used_off_loopback(tmp_path: Path) -> None:
    config = settle_cluster_secret(configured(tmp_path, "0.0.0.0", cluster_secret=OWN_SECRET))
    assert config.cluster_secret == OWN_SECRET


def test_the_secret_can_come_from_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret_file = tmp_path / "secret"
    secret_file.write_text(OWN_SECRET + "\n")
    monkeypatch.setenv("QUORUMQ_CLUSTER_SECRET_FILE", str(secret_file))
    assert settle_cluster_secret(configured(tmp_path, "0.0.0.0")).cluster_secret == OWN_SECRET


@pytest.mark.parametrize("content", [None, "", "\n"])
def test_a_missing_or_empty_secret_file_is_refused(tmp_path: Path, content: str | None) -> None:
    secret_file = tmp_path / "secret"
    if content is not None:
        secret_file.write_text(content)
    with pytest.raises(ConfigError, match="cluster_secret_file"):
        settle_cluster_secret(configured(tmp_path, "0.0.0.0", cluster_secret_file=str(secret_file)))


def test_a_secret_and_a_secret_file_together_are_refused(tmp_path: Path) -> None:
    secret_file = tmp_path / "secret"
    secret_file.write_text(OWN_SECRET)
    with pytest.raises(ConfigError, match="not both"):
        configured(tmp_path, cluster_secret=OWN_SECRET, cluster_secret_file=str(secret_file))


def test_a_lone_node_on_loopback_generates_a_private_secret_and_keeps_it(tmp_path: Path) -> None:
    first = settle_cluster_secret(configured(tmp_path))
    secret_path = tmp_path / "n1" / SECRET_FILE
    assert first.cluster_secret == secret_path.read_text()
    assert len(first.cluster_secret) >= 32 and first.cluster_secret != "quorumq-dev-secret"
    assert stat.S_IMODE(secret_path.stat().st_mode) == 0o600
    assert settle_cluster_secret(configured(tmp_path)).cluster_secret == first.cluster_secret
    other = settle_cluster_secret(configured(tmp_path / "elsewhere"))
    assert other.cluster_secret != first.cluster_secret
    secret_path.chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600"):  # a secret readable by others is refused
        settle_cluster_secret(configured(tmp_path))


def test_a_node_on_loopback_with_peers_needs_a_shared_secret(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="share"):
        settle_cluster_secret(configured(tmp_path, seeds="n1@127.0.0.1:8180,n2@127.0.0.1:8181"))
    with pytest.raises(ConfigError, match="share"):
        settle_cluster_secret(configured(tmp_path, join="http://127.0.0.1:8081"))


def test_the_public_development_secret_still_works_on_loopback(tmp_path: Path) -> None:
    config = configured(tmp_path, cluster_secret="quorumq-dev-secret")
    assert settle_cluster_secret(config).cluster_secret == "quorumq-dev-secret"
