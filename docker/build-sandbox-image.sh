#!/usr/bin/env bash
# Build the sandbox images without a registry (docker pull does not work on our machines).
#
#   docker/build-sandbox-image.sh [full|mini|all]     (default: full)
#
#   full  controlcenter-sandbox:latest       debootstrap'd Debian (python3, pytest, git, ripgrep…), ≈ 80 s
#   mini  controlcenter-sandbox-mini:latest  busybox only, ≈ 1 s; for quick tests that need no python
#
# Environment: IMAGE, MINI_IMAGE (image names), FORCE=1 (rebuild even if the image exists),
# SUITE (default bookworm), MIRROR (default: read from /etc/apt/sources.list*; set it when
# this host has none),
# SANDBOX_UID (default 10001; the non-root user "sandbox" baked into the image).
# Hosts with a registry can use docker/sandbox.Dockerfile instead.
set -euo pipefail

WHAT="${1:-full}"
IMAGE="${IMAGE:-controlcenter-sandbox:latest}"
MINI_IMAGE="${MINI_IMAGE:-controlcenter-sandbox-mini:latest}"
SUITE="${SUITE:-bookworm}"
SANDBOX_UID="${SANDBOX_UID:-10001}"
FORCE="${FORCE:-0}"
PACKAGES="python3,python3-pytest,git,ripgrep,coreutils,procps,ca-certificates,findutils,grep,sed,less"
PATH_IN_IMAGE="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

CLEANUP=()
cleanup() { [ ${#CLEANUP[@]} -eq 0 ] || rm -rf "${CLEANUP[@]}"; }
trap cleanup EXIT

log() { printf '[sandbox-image] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

image_exists() { docker image inspect "$1" >/dev/null 2>&1; }

needs_build() {
    if image_exists "$1" && [ "$FORCE" != 1 ]; then
        log "$1 already exists (FORCE=1 to rebuild)"
        return 1
    fi
    return 0
}

# The first mirror configured for $SUITE, from deb822 *.sources files or one-line *.list files.
# The apt mirror is the one source we know is reachable on registry-less machines.
pick_mirror() {
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -r "$f" ] || continue
        awk -v suite="$SUITE" '
            BEGIN { RS = ""; FS = "\n" }
            {
                uris = ""; ok = 0
                for (i = 1; i <= NF; i++) {
                    if ($i ~ /^URIs:/) { sub(/^URIs:[ \t]*/, "", $i); uris = $i }
                    if ($i ~ /^Suites:/) {
                        n = split($i, a, /[ \t]+/)
                        for (j = 2; j <= n; j++) if (a[j] == suite) ok = 1
                    }
                }
                if (ok && uris != "") { split(uris, u, " "); print u[1]; exit }
            }' "$f"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -r "$f" ] || continue
        awk -v suite="$SUITE" '
            $1 == "deb" {
                i = 2
                if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
                if ($(i + 1) == suite) { print $i; exit }
            }' "$f"
    done
}

# Adds the unprivileged user and the workspace dir that the sandbox backends rely on.
add_sandbox_user() {
    local root="$1"
    mkdir -p "$root/etc" "$root/workspace" "$root/tmp"
    touch "$root/etc/passwd" "$root/etc/group"
    grep -q '^root:' "$root/etc/passwd" || echo 'root:x:0:0:root:/root:/bin/sh' >>"$root/etc/passwd"
    grep -q '^root:' "$root/etc/group" || echo 'root:x:0:' >>"$root/etc/group"
    grep -q '^sandbox:' "$root/etc/passwd" ||
        echo "sandbox:x:${SANDBOX_UID}:${SANDBOX_UID}:sandbox:/workspace:/bin/sh" >>"$root/etc/passwd"
    grep -q '^sandbox:' "$root/etc/group" || echo "sandbox:x:${SANDBOX_UID}:" >>"$root/etc/group"
    chown "${SANDBOX_UID}:${SANDBOX_UID}" "$root/workspace"
    chmod 0755 "$root/workspace"
    chmod 1777 "$root/tmp"
}

import_rootfs() {
    local root="$1" name="$2" old
    old="$(docker image inspect -f '{{.Id}}' "$name" 2>/dev/null || true)"
    tar --numeric-owner -C "$root" -c . | docker import \
        -c "USER ${SANDBOX_UID}:${SANDBOX_UID}" \
        -c 'WORKDIR /workspace' \
        -c "ENV PATH=${PATH_IN_IMAGE}" \
        -c 'ENV LANG=C.UTF-8' \
        -c 'ENV HOME=/workspace' \
        -c 'LABEL controlcenter.sandbox.image=1' \
        -c 'CMD ["sleep", "infinity"]' \
        - "$name" >/dev/null
    # A forced rebuild would otherwise leave the previous image behind as a dangling layer.
    if [ -n "$old" ] && [ "$old" != "$(docker image inspect -f '{{.Id}}' "$name")" ]; then
        docker image rm "$old" >/dev/null 2>&1 || true
    fi
    log "built $name ($(docker image inspect -f '{{.Size}}' "$name" | awk '{printf "%.0f MB", $1/1e6}'))"
}

build_mini() {
    needs_build "$MINI_IMAGE" || return 0
    local bb
    bb="$(command -v busybox || true)"
    [ -n "$bb" ] || die "busybox not found: apt-get install -y busybox-static"
    # A dynamically linked busybox would need its libraries copied too.
    if ldd "$bb" >/dev/null 2>&1; then die "$bb is not static: apt-get install -y busybox-static"; fi
    local root
    root="$(mktemp -d /var/tmp/cc-sbx-mini.XXXXXX)"
    CLEANUP+=("$root")
    mkdir -p "$root/bin" "$root/usr/bin" "$root/sbin" "$root/etc" "$root/proc" "$root/dev" "$root/sys"
    cp "$bb" "$root/bin/busybox"
    local applet
    for applet in $("$bb" --list); do
        [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
    done
    add_sandbox_user "$root"
    import_rootfs "$root" "$MINI_IMAGE"
}

build_full() {
    needs_build "$IMAGE" || return 0
    [ "$(id -u)" = 0 ] || die "debootstrap needs root"
    command -v debootstrap >/dev/null || die "debootstrap not found: apt-get install -y debootstrap"
    local mirror="${MIRROR:-}"
    [ -n "$mirror" ] || mirror="$(pick_mirror | head -n1)"
    [ -n "$mirror" ] || die "no Debian mirror in /etc/apt/sources.list*: set MIRROR=<a Debian mirror URL>"
    local root
    root="$(mktemp -d /var/tmp/cc-sbx-rootfs.XXXXXX)"
    CLEANUP+=("$root" "$root.log")
    log "debootstrap $SUITE from $mirror (≈ 80 s)"
    debootstrap --variant=minbase --components=main --include="$PACKAGES" \
        "$SUITE" "$root" "$mirror" >"$root.log" 2>&1 ||
        { tail -n 30 "$root.log" >&2; rm -f "$root.log"; die "debootstrap failed"; }
    rm -f "$root.log"
    # Size: docs, caches and apt lists are useless inside a sandbox that never installs packages.
    # (Python's __pycache__ stays: the root is read-only, so without it every python3 start
    # would recompile the stdlib.)
    rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
        "$root"/usr/share/locale/* "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* \
        "$root"/var/cache/debconf/*-old "$root"/var/log/* "$root"/debootstrap
    add_sandbox_user "$root"
    import_rootfs "$root" "$IMAGE"
}

command -v docker >/dev/null || die "docker CLI not found"
docker info >/dev/null 2>&1 || die "Docker engine not reachable (is dockerd running?)"

case "$WHAT" in
full) build_full ;;
mini) build_mini ;;
all) build_mini && build_full ;;
mirror) pick_mirror ;; # for docker/build-images.sh
*) die "usage: $0 [full|mini|all]" ;;
esac
