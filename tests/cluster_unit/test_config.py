"""Node configuration from flags, QUORUMQ_* variables and a TOML file, in that precedence."""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster.config import Address, ConfigError, Seed, load_config
from queue_state.arguments import QueueDefaults

REQUIRED = {"node": "n1", "data_dir": "/tmp/n1", "http": "127.0.0.1:8080", "raft": "127.0.0.1:8180"}


def test_flags_override_environment_which_overrides_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_file = tmp_path / "node.toml"
    config_file.write_text('node = "from-file"\ntick_ms = 50\nconsumer_timeout_ms = 1000\n')
    monkeypatch.setenv("QUORUMQ_TICK_MS", "70")
    monkeypatch.setenv("QUORUMQ_SEEDS", "n1@127.0.0.1:8180,n2@127.0.0.1:8181")
    config = load_config({**REQUIRED, "node": "from-flag"}, config_file)
    assert config.node == "from-flag"
    assert config.tick_ms == 70
    assert config.consumer_timeout_ms == 1000
    assert config.seeds == (Seed("n1", Address("127.0.0.1", 8180)), Seed("n2", Address("127.0.0.1", 8181)))


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        ({**REQUIRED, "http": "nohost"}, "HOST:PORT"),
        ({**REQUIRED, "raft": "127.0.0.1:99999"}, "HOST:PORT"),
        ({**REQUIRED, "seeds": ("just-a-name",)}, "NAME@HOST:RAFTPORT"),
        ({**REQUIRED, "advertise_raft": "node1"}, "advertise_raft: expected HOST:PORT"),
        ({k: v for k, v in REQUIRED.items() if k != "node"}, "node"),
    ],
)
def test_bad_settings_are_refused_with_a_clear_message(flags: dict, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        load_config(flags)


def test_unknown_keys_in_the_file_are_refused(tmp_path: Path) -> None:
    config_file = tmp_path / "node.toml"
    config_file.write_text("colour = 'red'\n")
    with pytest.raises(ConfigError, match="colour"):
        load_config(REQUIRED, config_file)


def test_non_numeric_environment_number_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUORUMQ_TICK_MS", "fast")
    with pytest.raises(ConfigError, match="tick_ms"):
        load_config(REQUIRED)


def test_the_advertised_raft_address_defaults_to_the_listening_one(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_config(REQUIRED).raft_address == Address("127.0.0.1", 8180)
    monkeypatch.setenv("QUORUMQ_ADVERTISE_RAFT", "node1:8180")
    config = load_config({**REQUIRED, "raft": "0.0.0.0:8180"})
    assert config.raft == Address("0.0.0.0", 8180)
    assert config.raft_address == Address("node1", 8180)


def test_bad_queue_defaults_are_refused_naming_the_setting(tmp_path: Path) -> None:
    base = REQUIRED
    for setting, value, fragment in [
        ("default_delivery_limit", "-2", "must be >= -1"),
        ("default_leader_locator", "nearest", "must be one of"),
        ("default_group_size", "-1", "must be >= 1"),
        ("dead_letter_prefetch", "0", "must be >= 1"),
    ]:
        with pytest.raises(ConfigError, match=f"{setting}: .*{fragment}"):
            load_config({**base, setting: value})
    config = load_config({**base, "default_group_size": "5", "default_leader_locator": "balanced"})
    assert config.queue_defaults() == QueueDefaults(20, 5, "balanced")


def test_queue_settings_from_a_file_must_have_their_types(tmp_path: Path) -> None:
    config_file = tmp_path / "node.toml"
    for line, setting in [
        ("dead_letter_prefetch = 2.5", "dead_letter_prefetch"),
        ("dead_letter_prefetch = true", "dead_letter_prefetch"),
        ("default_group_size = false", "default_group_size"),
        ("default_leader_locator = 0", "default_leader_locator"),
    ]:
        config_file.write_text(line + "\n")
        with pytest.raises(ConfigError, match=setting):
            load_config(REQUIRED, config_file)
