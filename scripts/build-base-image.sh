#!/usr/bin/env bash
# Build a local stand-in for the official python:3.11-slim-bookworm image from Debian packages.
#
# Only for machines that cannot pull from a container registry: it does nothing when the image is
# already present (pulled or built before). It debootstraps a minimal Debian bookworm (whose python3
# is 3.11) with venv and pip, and imports it under the official name, so the Dockerfile's FROM line
# is the same everywhere. Needs root (debootstrap) and a reachable Debian mirror.
set -euo pipefail

image="${BASE_IMAGE:-python:3.11-slim-bookworm}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

if docker image inspect "$image" >/dev/null 2>&1; then
    echo "base image $image is present; nothing to build"
    exit 0
fi

if ! command -v debootstrap >/dev/null 2>&1; then
    apt-get update -q && apt-get install -y -q debootstrap
fi

root="$(mktemp -d /tmp/quorumq-base.XXXXXX)"
trap 'rm -rf "$root"' EXIT
started=$SECONDS

echo "building $image from Debian bookworm ($mirror) in $root"
debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
    bookworm "$root" "$mirror"

# Behave like the official image: `python` and `pip` on PATH, pip allowed to install system-wide,
# and no package caches, documentation or apt lists in the layer.
ln -sf /usr/bin/python3 "$root/usr/local/bin/python"
ln -sf /usr/bin/pip3 "$root/usr/local/bin/pip"
rm -f "$root"/usr/lib/python3.*/EXTERNALLY-MANAGED
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
    "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/var/log/*

tar --numeric-owner -C "$root" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'LABEL org.quorumq.base-image=debootstrap' \
    --change 'CMD ["python3"]' \
    - "$image"
echo "built $image in $((SECONDS - started))s"
