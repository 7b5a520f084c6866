#!/usr/bin/env bash
# Build the image's dependency wheels on the host into docker/wheels (gitignored), so that
# `docker build` installs offline. Optional: without wheels the image build uses the package index.
# The project itself is not among them: the image always installs the current sources.
# --spark adds the Spark extra (pyspark, pyarrow) for docker/spark.Dockerfile.
set -euo pipefail
cd "$(dirname "$0")/.."

python="${PYTHON:-.venv/bin/python}"
wheels=docker/wheels
target=.
if [[ "${1:-}" == "--spark" ]]; then
    target=".[spark]"
fi

# setuptools and wheel are the project's build requirements (pyproject.toml [build-system]).
"$python" -m pip wheel --quiet --disable-pip-version-check --wheel-dir "$wheels" \
    "$target" "setuptools>=77" wheel
rm -f "$wheels"/quorumq-*.whl
echo "wheels in $wheels: $(ls "$wheels"/*.whl | wc -l)"
