#!/usr/bin/env bash
# Build the node image's dependency wheels on the host into docker/wheels (gitignored), so that
# `docker build` installs offline. Optional: without wheels the image build uses the package index.
# The project itself is not among them: the image always installs the current sources.
set -euo pipefail
cd "$(dirname "$0")/.."

python="${PYTHON:-.venv/bin/python}"

# The build requirements and dependencies named in pyproject.toml.
mapfile -t requirements < <("$python" - <<'PY'
import tomllib

with open("pyproject.toml", "rb") as file:
    project = tomllib.load(file)
print("\n".join(project["build-system"]["requires"] + project["project"]["dependencies"]))
PY
)
"$python" -m pip wheel --quiet --disable-pip-version-check --wheel-dir docker/wheels "${requirements[@]}"
echo "wheels in docker/wheels: $(ls docker/wheels/*.whl | wc -l)"
