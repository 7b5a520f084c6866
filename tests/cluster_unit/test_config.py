"""Node configuration from flags, QUORUMQ_* variables and a TOML file, in that precedence."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from cluster.config import Address, ConfigError, NodeConfig, Seed, load_config, setting_docs
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


@pytest.mark.parametrize(
    ("setting", "value", "fragment"),
    [
        ("tick_ms", "0", "tick_ms: must be >= 1, got 0"),
        ("election_ticks", "1", "election_ticks: must be >= 2"),
        ("heartbeat_ticks", "5", "a leader must beat more often"),
        ("max_message_bytes", "-5", "max_message_bytes: must be >= 1"),
        ("batch_delay_ms", "-0.5", "batch_delay_ms: must be >= 0"),
        ("tls_http", "tru", "tls_http: expected true or false, got 'tru'"),
    ],
)
def test_rule_invalid_values_are_refused_at_start_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch, setting: str, value: str, fragment: str
) -> None:
    monkeypatch.setenv(f"QUORUMQ_{setting.upper()}", value)
    with pytest.raises(ConfigError, match=fragment):
        load_config(REQUIRED)


def test_every_setting_from_a_file_must_have_its_type(tmp_path: Path) -> None:
    config_file = tmp_path / "node.toml"
    for line, setting in [
        ("tick_ms = 1.5", "tick_ms"),
        ("loopback_guest = 'maybe'", "loopback_guest"),
        ("bootstrap_user = 7", "bootstrap_user"),
    ]:
        config_file.write_text(line + "\n")
        with pytest.raises(ConfigError, match=setting):
            load_config(REQUIRED, config_file)
    config_file.write_text("batch_delay_ms = 2\nloopback_guest = false\n")
    config = load_config(REQUIRED, config_file)
    assert (config.batch_delay_ms, config.loopback_guest) == (2.0, False)


def test_allowed_hosts_and_an_unset_guest_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_config(REQUIRED).loopback_guest is None  # unset: until an administrator exists
    config_file = tmp_path / "node.toml"
    config_file.write_text('allowed_hosts = ["queues.example", "lb.example"]\n')
    assert load_config(REQUIRED, config_file).allowed_hosts == ("queues.example", "lb.example")
    monkeypatch.setenv("QUORUMQ_ALLOWED_HOSTS", " queues.example, ,*")
    assert load_config(REQUIRED).allowed_hosts == ("queues.example", "*")
    monkeypatch.setenv("QUORUMQ_LOOPBACK_GUEST", "")  # an empty variable leaves the default
    assert load_config(REQUIRED).loopback_guest is None


def test_rule_a_misspelled_variable_is_a_warning_naming_the_closest_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("QUORUMQ_TIK_MS", "5")
    monkeypatch.setenv("QUORUMQ_NODES", "127.0.0.1:8080")  # the CLIs' own: no warning
    warnings: list[str] = []
    config = load_config(REQUIRED, warn=warnings.append)
    assert config.tick_ms == 100
    assert warnings == [
        "QUORUMQ_TIK_MS is not a quorumq setting and is ignored; did you mean QUORUMQ_TICK_MS?"
    ]


def test_secrets_come_from_files_named_by_their_file_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "user").write_text("admin\n")
    (tmp_path / "password").write_text(" s3cret pass\n")
    monkeypatch.setenv("QUORUMQ_BOOTSTRAP_USER_FILE", str(tmp_path / "user"))
    monkeypatch.setenv("QUORUMQ_BOOTSTRAP_PASSWORD_FILE", str(tmp_path / "password"))
    config = load_config(REQUIRED)
    assert (config.bootstrap_user, config.bootstrap_password) == ("admin", "s3cret pass")
    with pytest.raises(ConfigError, match="give bootstrap_password or bootstrap_password_file, not both"):
        load_config({**REQUIRED, "bootstrap_password": "other"})
    monkeypatch.setenv("QUORUMQ_BOOTSTRAP_PASSWORD_FILE", str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="bootstrap_password_file: cannot read"):
        load_config(REQUIRED)


def test_the_settings_listing_names_every_setting_its_variable_and_default() -> None:
    docs = {doc.name: doc for doc in setting_docs()}
    assert set(docs) == {f.name for f in fields(NodeConfig)}
    assert (docs["tick_ms"].variable, docs["tick_ms"].default) == ("QUORUMQ_TICK_MS", "100")
    assert docs["node"].default == "required"
    assert (
        docs["bootstrap_password"].variable == "QUORUMQ_BOOTSTRAP_PASSWORD or QUORUMQ_BOOTSTRAP_PASSWORD_FILE"
    )
    assert all(doc.help for doc in docs.values())


def test_an_empty_variable_of_a_number_or_a_flag_leaves_its_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUORUMQ_TLS_HTTP", "")  # as compose's ${X:-} gives it
    monkeypatch.setenv("QUORUMQ_TICK_MS", "")
    monkeypatch.setenv("QUORUMQ_DEFAULT_LEADER_LOCATOR", "")  # a string: empty is its value
    config = load_config(REQUIRED)
    assert (config.tls_http, config.tick_ms, config.default_leader_locator) == (False, 100, "")


def test_a_secret_file_of_whitespace_only_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "password").write_text("  \n")
    monkeypatch.setenv("QUORUMQ_BOOTSTRAP_PASSWORD_FILE", str(tmp_path / "password"))
    with pytest.raises(ConfigError, match=r"bootstrap_password_file: .* is empty"):
        load_config(REQUIRED)


def test_resource_limits_are_read_as_rabbitmq_writes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gib = 1024**3
    defaults = load_config(REQUIRED)
    assert defaults.disk_free_limit.bytes_of(8 * gib) == 50_000_000
    assert defaults.vm_memory_high_watermark.bytes_of(10 * gib) == 4 * gib
    monkeypatch.setenv("QUORUMQ_DISK_FREE_LIMIT", "mem_relative:1.5")
    monkeypatch.setenv("QUORUMQ_VM_MEMORY_HIGH_WATERMARK", "2GiB")
    config = load_config(REQUIRED)
    assert config.disk_free_limit.bytes_of(2 * gib) == 3 * gib
    assert config.vm_memory_high_watermark.bytes_of(64 * gib) == 2 * gib
    config_file = tmp_path / "node.toml"
    config_file.write_text('disk_free_limit = "1GB"\nvm_memory_high_watermark = 0.6\n')
    monkeypatch.delenv("QUORUMQ_DISK_FREE_LIMIT")
    monkeypatch.delenv("QUORUMQ_VM_MEMORY_HIGH_WATERMARK")
    config = load_config(REQUIRED, config_file)
    assert config.disk_free_limit.bytes_of(gib) == 1_000_000_000
    assert config.vm_memory_high_watermark.bytes_of(10 * gib) == 6 * gib
    for setting, value in [
        ("disk_free_limit", "lots"),
        ("disk_free_limit", "mem_relative:-1"),
        ("vm_memory_high_watermark", "5 parsecs"),
        ("vm_memory_high_watermark", "1.5"),  # not 1 byte, not 150 %: say which
        ("vm_memory_high_watermark", "2"),  # 2 bytes or 2 GB? a size needs its unit
        ("disk_free_limit", "0.5"),  # half a byte: no disk alarm at all
        ("disk_free_limit", "mem_relative:inf"),
    ]:
        monkeypatch.setenv(f"QUORUMQ_{setting.upper()}", value)
        with pytest.raises(ConfigError, match=setting):
            load_config(REQUIRED)
        monkeypatch.delenv(f"QUORUMQ_{setting.upper()}")
