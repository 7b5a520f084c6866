#!/bin/sh
# Install into the image's venv: offline from /src/docker/wheels when the host built wheels there
# (scripts/build-docker-wheels.sh), otherwise from the package index as any other build would.
set -eu
wheels=/src/docker/wheels
if ls "$wheels"/*.whl >/dev/null 2>&1; then
    set -- --no-index --find-links "$wheels" "$@"
fi
exec /opt/quorumq/bin/pip install --no-cache-dir --disable-pip-version-check "$@"
