#!/usr/bin/env bash
# Builds localhost/bookworm-min, the base of every Sluice image, without a
# container registry: debootstrap a minimal Debian 12 from the mirror apt
# already uses, leave out apt's caches and lists, locales, man pages and docs,
# and import the tree as an image. Needs root and debootstrap.
#
# Usage: scripts/build-base-image.sh [podman|docker]
set -euo pipefail
cd "$(dirname "$0")/.."
engine="${1:-${SLUICE_ENGINE:-podman}}"
image="${SLUICE_BASE_IMAGE:-localhost/bookworm-min}"
if [[ "$engine" == podman ]]; then
  export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/deploy/podman/containers.conf}"
fi

# The mirror apt uses on this machine (deb822 sources first, then the
# one-line format), so the image needs no network beyond what apt has.
mirror="${SLUICE_DEBIAN_MIRROR:-}"
if [[ -z "$mirror" && -r /etc/apt/sources.list.d/debian.sources ]]; then
  mirror="$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)"
fi
if [[ -z "$mirror" && -r /etc/apt/sources.list ]]; then
  mirror="$(awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' /etc/apt/sources.list)"
fi
mirror="${mirror:-http://deb.debian.org/debian}"

root="$(mktemp -d "${TMPDIR:-/tmp}/sluice-bookworm.XXXXXX")"
trap 'rm -rf "$root"' EXIT
started=$SECONDS
echo "base: debootstrap bookworm from $mirror"
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.log" 2>&1 || {
  tail -20 "$root.log" >&2
  exit 1
}
rm -f "$root.log"
# Keep the mirror for images built on this base (their apt-get install), and
# make apt forget its download caches in every layer built on top of it.
printf 'deb %s bookworm main\ndeb %s bookworm-updates main\n' "$mirror" "$mirror" >"$root/etc/apt/sources.list"
cat >"$root/etc/apt/apt.conf.d/docker-clean" <<'CONF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";
CONF
cat >"$root/etc/dpkg/dpkg.cfg.d/docker-excludes" <<'CONF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
CONF
rm -rf "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* "$root"/usr/share/locale/* \
  "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/var/log/*.log "$root"/var/cache/debconf/*-old
find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
tar -C "$root" -c . | "$engine" import --change 'CMD ["/bin/bash"]' - "$image" >/dev/null
echo "base: $image built in $((SECONDS - started)) s ($("$engine" image inspect --format '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}'))"
