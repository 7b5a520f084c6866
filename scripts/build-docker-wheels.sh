#!/usr/bin/env bash
# Build the images' dependency wheels on the host, so that `docker build` installs offline:
# the node's into docker/wheels, with --spark the Spark extra's into docker/spark-wheels (both
# gitignored). Optional: without wheels the image builds use the package index. The project itself
# is not among them: the image always installs the current sources.
set -euo pipefail
cd "$(dirname "$0")/.."

python="${PYTHON:-.venv/bin/python}"
case "${1:-}" in
    "") extra="" wheels=docker/wheels ;;
    --spark) extra=spark wheels=docker/spark-wheels ;;
    *) echo "usage: $0 [--spark]" >&2; exit 2 ;;
esac

# The requirements pyproject.toml names: build system and dependencies, or one extra's. The client
# (client/pyproject.toml) is one of the sources, not a wheel: its dependencies are listed instead.
mapfile -t requirements < <("$python" - "$extra" <<'PY'
import sys
import tomllib


def project(path):
    with open(path, "rb") as file:
        return tomllib.load(file)


server, client = project("pyproject.toml"), project("client/pyproject.toml")
extra = sys.argv[1]
if extra:
    print("\n".join(server["project"]["optional-dependencies"][extra]))
else:
    from_sources = client["project"]["name"]
    dependencies = [d for d in server["project"]["dependencies"] if not d.startswith(from_sources)]
    build = server["build-system"]["requires"] + client["build-system"]["requires"]
    print("\n".join(build + dependencies + client["project"]["dependencies"]))
PY
)
"$python" -m pip wheel --quiet --disable-pip-version-check --wheel-dir "$wheels" "${requirements[@]}"
echo "wheels in $wheels: $(ls "$wheels"/*.whl | wc -l)"
