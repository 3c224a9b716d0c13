#!/usr/bin/env bash
# Build every image of the deployment without a registry: a Debian base made with debootstrap
# and `docker import` (as docker/build-sandbox-image.sh makes the sandbox's), then the app, the
# balancer, Redis and PostgreSQL from their Dockerfiles with BASE_IMAGE set to that base. Hosts
# with a registry build the same Dockerfiles on debian:bookworm-slim (docker-compose build).
#
#   docker/build-images.sh [base|app|lb|redis|postgres|all]     (default: all)
#
#   base      controlcenter-base:bookworm   debootstrap'd Debian, apt sources, this host's CAs
#   app       controlcenter:latest          web, runner, workers and beat (Dockerfile)
#   lb        controlcenter-lb:latest       HAProxy (docker/lb)
#   redis     controlcenter-redis:latest    redis-server (docker/redis)
#   postgres  controlcenter-postgres:latest PostgreSQL (docker/postgres)
#
# Environment: FORCE=1 (rebuild the base even if it exists; the others are always built, from
# Docker's layer cache where nothing changed), SUITE (default bookworm), MIRROR (default:
# read from /etc/apt/sources.list*; set it when
# this host has none), CA_BUNDLE (default: this host's
# /etc/ssl/certs/ca-certificates.crt, so builds behind a TLS-inspecting proxy work; empty: the
# base's own), BASE (image name of the base).
set -euo pipefail
cd "$(dirname "$0")/.."

WHAT="${1:-all}"
SUITE="${SUITE:-bookworm}"
FORCE="${FORCE:-0}"
BASE="${BASE:-controlcenter-base:$SUITE}"
CA_BUNDLE="${CA_BUNDLE-/etc/ssl/certs/ca-certificates.crt}"

log() { printf '[images] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
image_exists() { docker image inspect "$1" >/dev/null 2>&1; }
needs_build() {
    if image_exists "$1" && [ "$FORCE" != 1 ]; then
        log "$1 already exists (FORCE=1 to rebuild)"
        return 1
    fi
}

# shellcheck source=docker/build-sandbox-image.sh
pick_mirror() { SUITE="$SUITE" bash docker/build-sandbox-image.sh mirror; }

build_base() {
    needs_build "$BASE" || return 0
    [ "$(id -u)" = 0 ] || die "debootstrap needs root"
    command -v debootstrap >/dev/null || die "debootstrap not found: apt-get install -y debootstrap"
    local mirror="${MIRROR:-}"
    [ -n "$mirror" ] || mirror="$(pick_mirror | head -n1)"
    [ -n "$mirror" ] || die "no Debian mirror in /etc/apt/sources.list*: set MIRROR=<a Debian mirror URL>"
    local root
    root="$(mktemp -d /var/tmp/cc-base-rootfs.XXXXXX)"
    trap 'rm -rf "$root" "$root.log"' RETURN
    log "debootstrap $SUITE from $mirror"
    debootstrap --variant=minbase --components=main --include=ca-certificates \
        "$SUITE" "$root" "$mirror" >"$root.log" 2>&1 ||
        { tail -n 30 "$root.log" >&2; die "debootstrap failed"; }
    # The Dockerfiles install what each image needs with apt-get: sources, no recommends, no
    # daemons started during a build.
    printf 'deb %s %s main\ndeb %s %s-updates main\n' "$mirror" "$SUITE" "$mirror" "$SUITE" \
        >"$root/etc/apt/sources.list"
    printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' \
        >"$root/etc/apt/apt.conf.d/90controlcenter"
    printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
    chmod 0755 "$root/usr/sbin/policy-rc.d"
    if [ -n "$CA_BUNDLE" ] && [ -r "$CA_BUNDLE" ]; then
        # What this host trusts (a TLS-inspecting proxy's CA, say), for apt and pip in builds.
        cp "$CA_BUNDLE" "$root/usr/local/share/ca-certificates/host-bundle.crt"
        chroot "$root" update-ca-certificates >/dev/null 2>&1 || true
    fi
    rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
        "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/log/* "$root"/debootstrap
    tar --numeric-owner -C "$root" -c . | docker import \
        -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        -c 'ENV LANG=C.UTF-8' \
        -c 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
        -c 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
        -c 'CMD ["bash"]' \
        - "$BASE" >/dev/null
    log "built $BASE"
}

# A Dockerfile on the base. --network host: the engine here runs without a default bridge.
build_on_base() {
    local name="$1" context="$2"
    shift 2
    # Always built: Docker's layer cache makes an unchanged image a few seconds' work, and a
    # changed source never runs as an old image.
    image_exists "$BASE" || build_base
    log "building $name"
    docker build --network host --build-arg "BASE_IMAGE=$BASE" -t "$name" "$@" "$context" >&2
    log "built $name ($(docker image inspect -f '{{.Size}}' "$name" | awk '{printf "%.0f MB", $1/1e6}'))"
}

command -v docker >/dev/null || die "docker CLI not found"
docker info >/dev/null 2>&1 || die "Docker engine not reachable (is dockerd running?)"

case "$WHAT" in
base) build_base ;;
app) build_on_base controlcenter:latest . ;;
lb) build_on_base controlcenter-lb:latest docker/lb ;;
redis) build_on_base controlcenter-redis:latest docker/redis ;;
postgres) build_on_base controlcenter-postgres:latest docker/postgres ;;
all)
    build_base
    build_on_base controlcenter-redis:latest docker/redis
    build_on_base controlcenter-postgres:latest docker/postgres
    build_on_base controlcenter-lb:latest docker/lb
    build_on_base controlcenter:latest .
    ;;
*) die "usage: $0 [base|app|lb|redis|postgres|all]" ;;
esac
