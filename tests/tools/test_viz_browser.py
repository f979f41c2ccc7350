"""The HTML view in a real browser (headless Chromium): no console errors, readable fit view,
kernel view switch, and screenshots. Skips cleanly when /usr/bin/chromium is absent (Debian's
``chromium`` package provides it); nothing is installed here.

Set TENSORPLAY_SCREENSHOT_DIR to keep the screenshots for a look.
"""
from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import zlib

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.func import grad
from tensorplay.tools import viz

CHROMIUM = "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs /usr/bin/chromium (Debian package chromium)")

# Recorded into the DOM, so that --dump-dom shows them: uncaught errors and console.error calls.
ERROR_HOOK = """<script>
window.__errors = [];
function __note(m) { window.__errors.push(String(m));
  document.documentElement.setAttribute('data-errors', window.__errors.join(' | ')); }
window.addEventListener('error', function (e) { __note(e.message); });
var __consoleError = console.error;
console.error = function () { __note(Array.prototype.join.call(arguments, ' ')); __consoleError.apply(console, arguments); };
</script>"""
CLICK_KERNEL_VIEW = """<script>window.addEventListener('load', function () {
  document.querySelector('.tp-view').click();
  document.documentElement.setAttribute('data-view', document.querySelector('.tp-viz').className);
});</script>"""


def big_graph():
    """The gradient of a small MLP: a few dozen nodes in more kernels than any fixed palette has."""
    def loss(w1, b1, w2, w3, x):
        h = tp.tanh(x @ w1 + b1)
        h2 = tp.sigmoid(h @ w2) * tp.exp(-h.sum(-1, keepdim=True))
        return tp.log_softmax(h2 @ w3, dim=-1).sum() + (tp.sigmoid(h) * tp.exp(-h * h)).mean()

    return tp.make_graph(grad(loss, argnums=(0, 1, 2, 3)), tp.ones(4, 8), tp.ones(8), tp.ones(8, 6),
                         tp.ones(6, 3), tp.ones(5, 4)).graph


def chromium(url: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--window-size=1400,900", "--enable-logging=stderr", "--v=0", *extra, url],
                          capture_output=True, encoding="utf-8", errors="replace", timeout=180)


def page(tmp_path, name: str, extra_script: str = "") -> str:
    html = viz.graph_to_html(big_graph(), full_document=True, title="grad of an MLP")
    html = html.replace("<head>", "<head>" + ERROR_HOOK, 1).replace("</body>", extra_script + "</body>", 1)
    path = tmp_path / name
    path.write_text(html, encoding="utf-8")
    return path.as_uri()


def errors(dom: str) -> list[str]:
    """What the error hook recorded on the <html> element."""
    html_tag = re.search(r"<html[^>]*>", dom).group(0)
    return re.findall(r'data-errors="([^"]*)"', html_tag)


def read_png(path) -> np.ndarray:
    """RGB(A) pixels of an 8-bit PNG (what Chromium writes), decoded with zlib: no imaging library."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    width, height, depth, colour = header[:4]
    assert depth == 8 and colour in (2, 6)
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    out = np.zeros((height, stride), np.uint8)
    prev = np.zeros(stride, np.int32)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int32)
        cur = np.zeros(stride, np.int32)
        for x in range(stride):
            a = cur[x - channels] if x >= channels else 0
            b = prev[x]
            c = prev[x - channels] if x >= channels else 0
            if f == 0:
                pred = 0
            elif f == 1:
                pred = a
            elif f == 2:
                pred = b
            elif f == 3:
                pred = (a + b) // 2
            else:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            cur[x] = (line[x] + pred) & 0xFF
        out[y] = cur
        prev = cur
    return out.reshape(height, width, channels)[:, :, :3]


def keep(path, name: str) -> None:
    folder = os.environ.get("TENSORPLAY_SCREENSHOT_DIR")
    if folder:
        os.makedirs(folder, exist_ok=True)
        shutil.copy(path, os.path.join(folder, name))


def test_page_loads_without_console_errors_and_fits_readably(tmp_path):
    p = chromium(page(tmp_path, "ops.html"), "--dump-dom")
    dom = p.stdout
    assert 'data-ready="1"' in dom, p.stderr[-2000:]
    assert not errors(dom), errors(dom)
    assert "Uncaught" not in p.stderr
    scale = float(re.search(r'class="tp-graph tp-ops"[^>]*data-scale="([\d.]+)"', dom).group(1))
    assert scale >= viz.MIN_FIT_SCALE  # text is never shrunk below 80 % in the fit view


def test_kernel_view_switch_in_the_browser(tmp_path):
    p = chromium(page(tmp_path, "kernels.html", CLICK_KERNEL_VIEW), "--dump-dom")
    assert not errors(p.stdout), errors(p.stdout)
    assert re.search(r'data-view="[^"]*tp-show-kernels', p.stdout)


@pytest.mark.parametrize("view", ["ops", "kernels"])
def test_screenshot_shows_every_kernel_colour(tmp_path, view):
    g = big_graph()
    url = page(tmp_path, f"{view}.html", CLICK_KERNEL_VIEW if view == "kernels" else "")
    shot = tmp_path / f"{view}.png"
    p = chromium(url, f"--screenshot={shot}")
    assert shot.exists(), p.stderr[-2000:]
    keep(shot, f"viz_{view}.png")
    pixels = read_png(shot)
    assert pixels.shape[:2] == (900, 1400)
    seen = {tuple(int(v) for v in px) for px in pixels.reshape(-1, 3)[::3]}
    names = viz.legend_order(viz._auto_kernels(g).values())
    colours = viz.kernel_colours(len(names))
    rgb = [tuple(int(c[i:i + 2], 16) for i in (1, 3, 5)) for c in colours]
    # every kernel's fill is on screen (the legend swatches at least), in its own colour
    assert len(names) > 16 and all(c in seen for c in rgb), [c for c, x in zip(colours, rgb) if x not in seen]
