"""The Helm chart (deploy/helm/controlcenter): rendered by the real ``helm`` (``make helm``
installs it), every object valid against the Kubernetes schemas (kubernetes-validate, offline,
strict: unknown fields fail), and the parts a fleet needs are there."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.deploy.support import ROOT, longest_tool_timeout, tool_path
from tests.helpers import require

CHART = ROOT / "deploy" / "helm" / "controlcenter"
SECRET = "cc-secrets"
RELEASE = "cc"
COMPONENTS = {"web", "runner", "worker", "browser-worker", "beat"}
# The oldest release the chart's kubeVersion admits that still gets fixes, and the newest the
# schemas know.
KUBE_VERSIONS = ("1.30.0", "latest")

# Everything optional switched on, so those templates are validated too.
EVERYTHING: dict[str, Any] = {
    "ingress": {"enabled": True, "className": "nginx", "tlsSecretName": "cc-tls"},
    "networkPolicy": {
        "webFrom": [{"namespaceSelector": {}}],
        "egress": {"enabled": True, "to": [{"ipBlock": {"cidr": "10.0.5.0/24"}}]},
    },
    "worker": {"autoscaling": {"enabled": True}, "runtimeClassName": "gvisor"},
    "extraEnv": [
        {"name": "LLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": "llm", "key": "api-key"}}}
    ],
    "extraEnvFrom": [{"configMapRef": {"name": "cc-extra"}}],
    "imagePullSecrets": [{"name": "registry"}],
    "shared": {"storageClassName": "nfs"},
}


def _helm() -> str:
    helm = tool_path("helm")
    require(helm is not None, "helm is not installed (make helm)")
    assert helm is not None
    return helm


def _validator() -> Any:
    try:
        import kubernetes_validate
    except ImportError:
        require(False, "kubernetes-validate is not installed (pip install -e '.[dev]')")
    return kubernetes_validate


def render(
    *args: str, values: dict[str, Any] | None = None, kube_version: str = "1.33.0"
) -> list[dict[str, Any]]:
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as values_file:
        yaml.safe_dump(values or {}, values_file)
        values_file.flush()
        result = subprocess.run(
            [
                *(_helm(), "template", RELEASE, str(CHART), "--kube-version", kube_version),
                *("-f", values_file.name, *args),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


@pytest.fixture(scope="module")
def objects() -> list[dict[str, Any]]:
    return render("--set", f"existingSecret={SECRET}")


def of_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def component(obj: dict[str, Any]) -> str:
    return obj["metadata"]["labels"]["app.kubernetes.io/component"]


def pod_specs(objects: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for obj in objects:
        if obj["kind"] in ("Deployment", "Job"):
            yield component(obj), obj["spec"]["template"]["spec"]


def test_the_chart_lints() -> None:
    result = subprocess.run(
        [_helm(), "lint", "--strict", str(CHART), "--set", f"existingSecret={SECRET}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
@pytest.mark.parametrize("variant", ["defaults", "everything"])
def test_every_rendered_object_is_valid_for_kubernetes(kube_version: str, variant: str) -> None:
    validator = _validator()
    version = validator.latest_version() if kube_version == "latest" else kube_version
    values = EVERYTHING if variant == "everything" else {}
    rendered = render("--set", f"existingSecret={SECRET}", values=values, kube_version=version)
    assert len(rendered) >= 15
    for obj in rendered:
        where = f"{obj['kind']}/{obj['metadata']['name']}"
        try:
            validator.validate(obj, version, strict=True)
        except validator.ValidationError as exc:
            pytest.fail(f"{where} is not valid for Kubernetes {version}: {exc}")
    if variant == "everything":
        kinds = {o["kind"] for o in rendered}
        assert {"Ingress", "HorizontalPodAutoscaler"} <= kinds
        assert len(of_kind(rendered, "HorizontalPodAutoscaler")) == 2


def test_the_required_kinds_are_there(objects: list[dict[str, Any]]) -> None:
    deployments = of_kind(objects, "Deployment")
    assert sorted(component(d) for d in deployments) == sorted(COMPONENTS)
    (job,) = of_kind(objects, "Job")
    assert component(job) == "migrate"
    (service,) = of_kind(objects, "Service")
    assert service["spec"]["selector"]["app.kubernetes.io/component"] == "web"
    (claim,) = of_kind(objects, "PersistentVolumeClaim")
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    budgets = of_kind(objects, "PodDisruptionBudget")
    guarded = {b["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"] for b in budgets}
    assert guarded >= {"web", "runner", "worker", "browser-worker"}
    (hpa,) = of_kind(objects, "HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"]["name"] == f"{RELEASE}-controlcenter-web"
    web = next(d for d in deployments if component(d) == "web")
    assert "replicas" not in web["spec"]  # the HPA owns the count
    policies = of_kind(objects, "NetworkPolicy")
    assert policies and all("Ingress" in p["spec"]["policyTypes"] for p in policies)


def test_migrations_are_a_hook_that_runs_before_the_new_pods(
    objects: list[dict[str, Any]],
) -> None:
    (job,) = of_kind(objects, "Job")
    hooks = job["metadata"]["annotations"]["helm.sh/hook"].split(",")
    assert set(hooks) == {"pre-install", "pre-upgrade"}
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert "manage.py migrate --noinput" in " ".join(container["command"])
    for deployment in of_kind(objects, "Deployment"):
        for c in deployment["spec"]["template"]["spec"]["containers"]:
            assert "migrate" not in " ".join(c["command"]), component(deployment)


def test_probes_point_at_the_health_endpoints_and_commands(objects: list[dict[str, Any]]) -> None:
    for deployment in of_kind(objects, "Deployment"):
        kind = component(deployment)
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        if kind == "web":
            assert container["readinessProbe"]["httpGet"]["path"] == "/healthz/ready"
            assert container["livenessProbe"]["httpGet"]["path"] == "/healthz/live"
            assert container["startupProbe"]["httpGet"]["path"] == "/healthz/live"
            # The probe's Host header must be one the app accepts.
            headers = container["readinessProbe"]["httpGet"]["httpHeaders"]
            host = next(h["value"] for h in headers if h["name"] == "Host")
            env = {e["name"]: e.get("value") for e in container["env"]}
            assert host in env["ALLOWED_HOSTS"].split(",")
        else:
            # Liveness (and startup) only "its loop turns": an outage of the database restarts
            # nothing; readiness asks the database, the broker, keys and directories too.
            health = ["python", "manage.py", "health", "--kind", kind]
            for probe in ("livenessProbe", "startupProbe"):
                command = container[probe]["exec"]["command"]
                assert command == [*health, "--live"], command
            assert container["readinessProbe"]["exec"]["command"] == health


def test_every_process_gets_the_key_from_the_existing_secret_and_the_shared_volume(
    objects: list[dict[str, Any]],
) -> None:
    (claim,) = of_kind(objects, "PersistentVolumeClaim")
    seen = set()
    for kind, spec in pod_specs(objects):
        seen.add(kind)
        (container,) = spec["containers"]
        env = {e["name"]: e for e in container["env"]}
        assert len(env) == len(container["env"]), f"{kind}: an environment variable twice"
        for name, key in (
            ("SECRET_KEY", "SECRET_KEY"),
            ("DATABASE_URL", "DATABASE_URL"),
            ("REDIS_URL", "REDIS_URL"),
        ):
            ref = env[name]["valueFrom"]["secretKeyRef"]
            assert (ref["name"], ref["key"]) == (SECRET, key), kind
        var_dir = env["CC_VAR_DIR"]["value"]
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        volumes = {v["name"]: v for v in spec["volumes"]}
        if kind == "migrate":
            continue  # a pre-install hook runs before the claim exists
        volume = volumes[mounts[var_dir]]
        assert volume["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"], kind
    assert seen == COMPONENTS | {"migrate"}


def test_no_existing_secret_is_refused_with_a_clear_message() -> None:
    result = subprocess.run(
        [_helm(), "template", RELEASE, str(CHART)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0
    assert "existingSecret is required" in result.stderr


def test_tool_workers_may_finish_their_calls_when_stopped(objects: list[dict[str, Any]]) -> None:
    longest = longest_tool_timeout()
    for deployment in of_kind(objects, "Deployment"):
        grace = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        if component(deployment) in ("worker", "browser-worker"):
            assert grace >= longest, component(deployment)


def test_only_the_worker_is_privileged_for_its_sandboxes(objects: list[dict[str, Any]]) -> None:
    for kind, spec in pod_specs(objects):
        (container,) = spec["containers"]
        privileged = container.get("securityContext", {}).get("privileged", False)
        assert spec["automountServiceAccountToken"] is False, kind
        if kind == "worker":
            assert privileged
            env = {e["name"]: e.get("value") for e in container["env"]}
            assert env["SANDBOX_BACKEND"] == "bubblewrap"
        else:
            assert not privileged, kind
            assert spec["securityContext"]["runAsNonRoot"] is True, kind
            assert container["securityContext"]["allowPrivilegeEscalation"] is False, kind
