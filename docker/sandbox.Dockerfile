# Sandbox image for hosts that can pull from a registry:
#   docker build -f docker/sandbox.Dockerfile -t controlcenter-sandbox:latest docker/
#   (add --network host when dockerd runs with --bridge=none: the build needs apt)
#   (--build-arg BASE=... for a mirrored or pinned Debian bookworm base)
# Registry-less hosts (our CI) build the same layout with docker/build-sandbox-image.sh.
# The backends rely on: a non-root user 10001 ("sandbox"), /workspace, sh, setsid, kill, sleep.
ARG BASE=debian:bookworm-slim
FROM ${BASE}

ARG SANDBOX_UID=10001

RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        python3 python3-pytest git ripgrep coreutils procps ca-certificates findutils less \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /usr/share/doc/* /usr/share/man/* \
    && groupadd --gid "${SANDBOX_UID}" sandbox \
    && useradd --uid "${SANDBOX_UID}" --gid "${SANDBOX_UID}" --home-dir /workspace \
        --no-create-home --shell /bin/sh sandbox \
    && install -d -o "${SANDBOX_UID}" -g "${SANDBOX_UID}" -m 0755 /workspace

ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 \
    HOME=/workspace
LABEL controlcenter.sandbox.image=1
USER ${SANDBOX_UID}:${SANDBOX_UID}
WORKDIR /workspace
CMD ["sleep", "infinity"]
