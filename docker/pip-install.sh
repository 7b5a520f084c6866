#!/bin/sh
# pip-install.sh WHEEL_DIR REQUIREMENT...: install into the image's venv, offline from WHEEL_DIR when
# the host built wheels there (scripts/build-docker-wheels.sh), else from the package index.
set -eu
wheels="$1"
shift
if ls "$wheels"/*.whl >/dev/null 2>&1; then
    set -- --no-index --find-links "$wheels" "$@"
fi
exec /opt/quorumq/bin/pip install --no-cache-dir --disable-pip-version-check "$@"
