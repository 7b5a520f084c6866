"""Fixtures for the Docker tests: the node image (built once a session) and compose projects that are
always torn down with their volumes. Every test here is skipped when `docker info` fails."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from compose_project import ComposeProject, ProjectFactory, build_node_image, docker_unavailable_reason

THREE_NODES = ["node1", "node2", "node3"]


@pytest.fixture(scope="session")
def node_image() -> None:
    """Skip without a Docker engine; otherwise build the node image as docs/use/docker.md says."""
    reason = docker_unavailable_reason()
    if reason is not None:
        pytest.skip(f"Docker tests need a Docker engine: {reason}")
    build_node_image()


@pytest.fixture(scope="module")
def three_node_project(node_image: None) -> Iterator[ComposeProject]:
    """A 3-node cluster from docker-compose.yml shared by a module's tests; `down -v` at the end."""
    project = ComposeProject(THREE_NODES)
    try:
        project.up()
        yield project
    finally:
        project.down()


@pytest.fixture
def cluster(three_node_project: ComposeProject) -> ComposeProject:
    """The module's cluster with every node running and healthy before the test starts."""
    three_node_project.up()
    three_node_project.wait_health(three_node_project.nodes)
    return three_node_project


@pytest.fixture
def new_project(node_image: None) -> Iterator[ProjectFactory]:
    """Make compose projects of one's own (nodes, compose files); each is taken down with `down -v`."""
    created: list[ComposeProject] = []

    def create(nodes: Sequence[str], files: Sequence[Path]) -> ComposeProject:
        created.append(ComposeProject(nodes, files))
        return created[-1]

    try:
        yield create
    finally:
        for project in created:
            project.down()
