"""The pages of the local test site. ``{V}`` is the victim's origin (127.0.0.2, never
allowed), ``{O}`` the other server's (127.0.0.3: passes the address guard, not the domain
allowlist), ``{M}`` the cloud metadata address."""

from __future__ import annotations

import time

from tests.tools.browser.site import Page, Request, Response, Site, html

README_TEXT = "Control Center test README. The quick brown fox jumps over the lazy dog."
METADATA = "http://169.254.169.254"


def _index(r: Request) -> Response:
    return html(
        "Test site",
        "<h1>Test site</h1><p>Welcome to the local test site.</p>"
        "<nav><a id='readme' href='/readme'>README</a> <a href='/form'>Form</a></nav>",
    )


def _readme(r: Request) -> Response:
    return html("README", f"<main><h1>README</h1><p id='text'>{README_TEXT}</p></main>")


def _form(r: Request) -> Response:
    return html(
        "Search",
        "<form action='/search'><input name='q' aria-label='Query'>"
        "<button type='submit'>Go</button></form>",
    )


def _search(r: Request) -> Response:
    return html("Results", f"<p id='q'>You searched for: {r.query.get('q', '')}</p>")


def _set_cookie(r: Request) -> Response:
    status, headers, body = html("Cookie set", f"<p>set {r.query.get('v', '')}</p>")
    return status, [*headers, ("Set-Cookie", f"flavour={r.query.get('v', '')}; Path=/")], body


def _show_cookie(r: Request) -> Response:
    return html("Cookie", f"<p id='cookie'>cookie=[{r.headers.get('cookie', '')}]</p>")


def _redirect(r: Request) -> Response:
    return 302, [("Location", r.query["to"])], b""


def _delayed(r: Request) -> Response:
    return html(
        "Delayed",
        "<div id='box'></div><script>setTimeout(() => {"
        " document.getElementById('box').innerHTML = '<p id=late>arrived</p>'; }, 400);</script>",
    )


def _js(r: Request) -> Response:
    return html(
        "JS",
        "<p id='out'>static</p><script>document.getElementById('out').textContent = 'from js';"
        "</script>",
    )


def _long(r: Request) -> Response:
    words = " ".join(f"word{i}" for i in range(3000))
    links = "".join(f"<a href='/readme?n={i}'>link {i}</a> " for i in range(40))
    return html("Long", f"<article><p>{words}</p></article><footer>{links}</footer>")


def _tall(r: Request) -> Response:
    return html(
        "Tall", "<div style='height:2400px;background:linear-gradient(#fff,#38f)'>tall</div>"
    )


def _slow(r: Request) -> Response:
    time.sleep(float(r.query.get("s", "5")))
    return html("Slow", "<p>finally</p>")


def _download(r: Request) -> Response:
    return html("Download", "<a id='dl' href='/file.bin'>Get the file</a>")


def _file(r: Request) -> Response:
    headers = [
        ("Content-Type", "application/octet-stream"),
        ("Content-Disposition", "attachment; filename=file.bin"),
    ]
    return 200, headers, b"\x00" * 2048


def _pixel(r: Request) -> Response:
    return (
        200,
        [("Content-Type", "image/gif")],
        (
            b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00"
            b"\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"
        ),
    )


def pages_for(victim: Site, other: Site) -> dict[str, Page]:
    V, OT, M = victim.origin, other.origin, METADATA  # noqa: N806

    def subresources(r: Request) -> Response:
        # Every kind of request a page can make, at both servers and the metadata address.
        parts = []
        for origin in (V, OT, M):
            parts += [
                f"<img src='{origin}/img.png'>",
                f"<script src='{origin}/script.js'></script>",
                f"<link rel='stylesheet' href='{origin}/style.css'>",
                f"<iframe src='{origin}/frame'></iframe>",
                f"<video src='{origin}/video.mp4'></video>",
            ]
        script = f"""
          const targets = ['{V}', '{OT}', '{M}'];
          for (const t of targets) {{
            fetch(t + '/fetch').catch(() => {{}});
            const x = new XMLHttpRequest(); x.open('GET', t + '/xhr'); x.send();
            try {{ new WebSocket(t.replace('http', 'ws') + '/ws'); }} catch (e) {{}}
            navigator.sendBeacon && navigator.sendBeacon(t + '/beacon', 'x');
            new EventSource(t + '/events');
          }}
          const src = "for (const t of " + JSON.stringify(targets) + ")"
            + " fetch(t + '/worker').catch(() => {{}});";
          new Worker(URL.createObjectURL(new Blob([src])));
          document.title = 'Subresources';
        """
        return html(
            "Subresources (loading)",
            "<img src='/pixel.gif' id='own'>" + "".join(parts) + f"<script>{script}</script>",
        )

    def websockets(r: Request) -> Response:
        script = f"""
          const log = document.getElementById('log');
          for (const t of ['{V}', '{OT}', '{M}']) {{
            const ws = new WebSocket(t.replace('http', 'ws') + '/ws');
            ws.onclose = e => {{ log.textContent += e.code + ' '; }};
            ws.onopen = () => {{ log.textContent += 'OPEN '; }};
          }}
          const src = "const w = new WebSocket('{V.replace("http", "ws")}/worker-ws');"
            + "w.onclose = () => postMessage('closed'); w.onopen = () => postMessage('OPEN');";
          const worker = new Worker(URL.createObjectURL(new Blob([src])));
          worker.onmessage = e => {{ document.getElementById('worker').textContent = e.data; }};
        """
        return html("WebSockets", f"<p id='log'></p><p id='worker'></p><script>{script}</script>")

    def popup_on_load(r: Request) -> Response:
        return html(
            "Popups",
            f"<script>window.open('{V}/popup'); window.open('{M}/latest/meta-data/');</script>"
            f"<a id='bad' href='{V}/tab' target='_blank'>victim tab</a>"
            "<a id='good' href='/readme' target='_blank'>README in a new tab</a>"
            f"<button id='js' onclick=\"window.open('{V}/js-popup')\">open</button>",
        )

    def service_worker(r: Request) -> Response:
        return html(
            "SW",
            "<p id='sw'>pending</p><script>"
            "navigator.serviceWorker.register('/sw.js').then("
            " () => { document.getElementById('sw').textContent = 'registered'; },"
            " e => { document.getElementById('sw').textContent = 'refused: ' + e; })"
            ".finally(() => fetch('/probe').catch(() => {}));"
            "</script>",
        )

    def sw_script(r: Request) -> Response:
        body = (
            "self.addEventListener('install', () => self.skipWaiting());"
            f"self.addEventListener('fetch', e => e.respondWith(fetch('{V}/from-sw')));"
        )
        return 200, [("Content-Type", "text/javascript")], body.encode()

    def to_victim(r: Request) -> Response:
        return html("Links", f"<a id='away' href='{V}/clicked'>away</a>")

    return {
        "/": _index,
        "/readme": _readme,
        "/form": _form,
        "/search": _search,
        "/cookie/set": _set_cookie,
        "/cookie/show": _show_cookie,
        "/redirect": _redirect,
        "/delayed": _delayed,
        "/js": _js,
        "/long": _long,
        "/tall": _tall,
        "/slow": _slow,
        "/download": _download,
        "/file.bin": _file,
        "/pixel.gif": _pixel,
        "/subresources": subresources,
        "/popups": popup_on_load,
        "/websockets": websockets,
        "/sw": service_worker,
        "/sw.js": sw_script,
        "/links-away": to_victim,
    }
