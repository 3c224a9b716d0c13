"""A real rsyslog for the tests: ``/usr/sbin/rsyslogd`` on a loopback port with a config of
its own in a temporary directory — imtcp with the gtls (GnuTLS) stream driver, or plain TCP —
writing each message it receives, raw, one a line, to a file. Certificates are made here with
``cryptography``: a CA and a server certificate for 127.0.0.1 / localhost."""

from __future__ import annotations

import datetime
import glob
import ipaddress
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.helpers import require

RSYSLOGD = "/usr/sbin/rsyslogd"


@dataclass
class Pki:
    ca_pem: str
    cert_pem: str
    key_pem: str


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def make_pki(common: str = "test syslog CA") -> Pki:
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name(common))
        .issuer_name(_name(common))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("localhost"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return Pki(
        ca_pem=ca.public_bytes(pem).decode(),
        cert_pem=cert.public_bytes(pem).decode(),
        key_pem=key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode(),
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Rsyslog:
    """``start()`` / ``stop()`` as often as a test likes; ``messages()`` reads the file."""

    def __init__(self, directory: Path, *, tls: bool = True) -> None:
        require(os.access(RSYSLOGD, os.X_OK), "rsyslogd (apt-get install rsyslog)")
        if tls:
            require(
                bool(glob.glob("/usr/lib/*/rsyslog/lmnsd_gtls.so")),
                "rsyslog's GnuTLS driver (apt-get install rsyslog-gnutls)",
            )
        self.directory = directory
        self.tls = tls
        self.port = free_port()
        self.pki = make_pki()
        self.out = directory / "received.log"
        self.pidfile = directory / "rsyslogd.pid"
        self.proc: subprocess.Popen[bytes] | None = None
        (directory / "work").mkdir(exist_ok=True)
        for name, text in (
            ("ca.pem", self.pki.ca_pem),
            ("cert.pem", self.pki.cert_pem),
            ("key.pem", self.pki.key_pem),
        ):
            (directory / name).write_text(text)
        self.conf = directory / "rsyslog.conf"
        self.conf.write_text(self._config())

    def _config(self) -> str:
        d = self.directory
        if self.tls:
            tls_global = (
                f'global(workDirectory="{d / "work"}" '
                f'DefaultNetstreamDriverCAFile="{d / "ca.pem"}" '
                f'DefaultNetstreamDriverCertFile="{d / "cert.pem"}" '
                f'DefaultNetstreamDriverKeyFile="{d / "key.pem"}")\n'
                'module(load="imtcp" StreamDriver.Name="gtls" StreamDriver.Mode="1" '
                'StreamDriver.AuthMode="anon")\n'
            )
        else:
            tls_global = f'global(workDirectory="{d / "work"}")\nmodule(load="imtcp")\n'
        return (
            tls_global
            + f'input(type="imtcp" address="127.0.0.1" port="{self.port}")\n'
            + 'template(name="raw" type="string" string="%rawmsg%\\n")\n'
            + f'*.* action(type="omfile" file="{self.out}" template="raw")\n'
        )

    def start(self) -> None:
        self.pidfile.unlink(missing_ok=True)
        self.proc = subprocess.Popen(
            [RSYSLOGD, "-n", "-f", str(self.conf), "-i", str(self.pidfile)],
            stdout=subprocess.DEVNULL,
            stderr=open(self.directory / "rsyslogd.stderr", "ab"),  # noqa: SIM115
        )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    "rsyslogd exited: " + (self.directory / "rsyslogd.stderr").read_text()
                )
            with socket.socket() as probe:
                probe.settimeout(0.2)
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError("rsyslogd did not listen in time")

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def messages(self) -> list[str]:
        if not self.out.exists():
            return []
        return [line for line in self.out.read_text().splitlines() if line]
