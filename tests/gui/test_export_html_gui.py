"""The app's Export HTML entry (issue 23), driven with xdotool under Xvfb: Ctrl+Shift+H and
the Controls panel's "Export HTML" button write the whole view (every layer and head) as one
page, attention_b0_<mask>_LxS.html, with its settings JSON beside it, whatever formats are
ticked; the page is byte-identical to `attnscope export --settings <that JSON>`; pressed again
it never overwrites; an unwritable folder gives the error toast and writes nothing; a map
zoomed in the app is stored exactly beside the pooled maps (decoded here and in Chromium,
equal to `attnscope compute`'s probabilities within the 16-bit step). (The page itself is
checked in a browser by tests/cli/test_export_html.py.)"""
import base64
import json
import os
import re
import subprocess
import sys
import time
import unittest
import zlib

import numpy as np

import guitest as g
import test_export_gui as export_gui

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import reference as ref  # noqa: E402
import test_export_html as html_test  # noqa: E402

N = 300  # more than the 256 cells per side the page stores: its maps are pooled, the window is not


def page_data(path):
    """The data the page embeds (the JSON in its <script class="av-data">)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found = re.search(r'<script type="application/json" class="av-data">(.*?)</script>', text, re.S)
    return json.loads(found.group(1))  # "</" is written "<\/", which JSON reads as "</"


def decode_maps(encoded, cells, count, ranges):
    """count maps of cells 16-bit codes (low byte plane, then high) -> values (NaN = masked)."""
    raw = np.frombuffer(zlib.decompress(base64.b64decode(encoded)), np.uint8).reshape(count, 2, cells)
    codes = raw[:, 0].astype(np.int64) | (raw[:, 1].astype(np.int64) << 8)
    lo, hi = np.array(ranges, np.float64).T[:, :, None]
    return np.where(codes == 65535, np.nan, lo + codes * (hi - lo) / 65534)


def check_zoomed_window(self, tiled):
    """Zooms head 1 of a 300 x 300 causal map, exports the page, and checks its window: decoded
    here and shown in Chromium, it is compute's probabilities within the 16-bit step. A tiled
    run's page holds its overview (named) and the window's exact cells from Q and K."""
    bundle = os.path.join(self.dir, "bundle")
    ref.write_bundle(bundle, ref.make_case(11, B=1, L=N, D=8), meta=dict(heads=2, mask="causal"))
    computed = os.path.join(self.dir, "computed")
    result = subprocess.run([g.BIN, "compute", bundle, "--out", computed], capture_output=True, text=True,
                            timeout=120)
    self.assertEqual(result.returncode, 0, result.stderr)
    probs = np.load(os.path.join(computed, "probs.npy")).astype(np.float64)  # [B, H, L, S]
    folder = os.path.join(self.dir, "zoomed")
    shown = (lambda s: s.get("tiled") is not None) if tiled else (lambda s: s.get("L") == N)
    _, log, window, state = self.start("zoom", bundle, export_dir=folder, focused_head=1,
                                       ready=lambda s: g.settled(s) and shown(s))
    self.move_to_cell(window, state["rects"]["focus_probs"], (0, N, 0, N), 200, 100)
    for _ in range(3):  # 300 -> 240 -> 192 -> 154 cells per side
        self.x.xdotool("click", 4)
        time.sleep(0.15)
    state = g.wait_for_state(log, lambda s: s["zoom_window"][1] < 160)
    r0, rows, c0, cols = state["zoom_window"]
    self.x.xdotool("mousemove", "--window", window, 120, 6)
    self.press(window, "ctrl+shift+h")
    state = self.wait_export(log, 1)
    self.assertEqual(state["last_export"]["error"], "")
    page = state["last_export"]["paths"][0]
    data = page_data(page)
    if tiled:  # the overview is the view's map; its head metrics are the real maps'
        self.assertEqual((data["rows"], data["cols"]), (state["tiled"]["rows"], state["tiled"]["cols"]))
        self.assertTrue(data["pooling"].startswith("overview of L 300 \u00d7 S 300"), data["pooling"])
        self.assertEqual(len(data["metrics"]["rows"]), 2)
    else:
        self.assertEqual((data["rows"], data["cols"]), (256, 256))
        self.assertIn("pooled from 300 \u00d7 300 to 256 \u00d7 256", data["pooling"])
    w = data["window"]
    self.assertEqual((w["layer"], w["head"], w["row0"], w["col0"]), (0, 1, r0, c0))
    self.assertEqual((w["rows"], w["cols"], w["real_rows"], w["real_cols"]), (rows, cols, rows, cols))
    self.assertEqual(w["row_labels"][0].split(" ")[0], str(r0))
    # Decoded here: the exact cells of the window (masked above the diagonal).
    ranges = [k["quant"] for k in w["kinds"]]
    probs_window, scores_window = decode_maps(w["maps"], rows * cols, 2, ranges).reshape(2, rows, cols)
    want = probs[0, 1, r0:r0 + rows, c0:c0 + cols]
    allowed = np.arange(c0, c0 + cols)[None, :] <= np.arange(r0, r0 + rows)[:, None]
    step = (ranges[0][1] - ranges[0][0]) / 65534
    np.testing.assert_array_equal(np.isnan(probs_window), ~allowed)
    self.assertLessEqual(np.nanmax(np.abs(probs_window - want)), step / 2 + 1e-7)
    np.testing.assert_array_equal(np.isnan(scores_window), ~allowed)
    # In Chromium: the page opens on that head's window; tooltips are compute's values.
    cells = [[0, 0], [rows - 1, 0], [rows // 2, cols // 3], [rows - 1, cols - 1], [0, cols - 1]]
    spec = {"puppeteer": html_test.ensure_puppeteer(), "chromium": html_test.CHROMIUM, "pages": [
        {"path": page, "shots": folder, "focus": [{"layer": 0, "head": 1, "kind": 0, "cells": cells}]}]}
    out = os.path.join(folder, "browser.json")
    with open(os.path.join(folder, "spec.json"), "w") as f:
        json.dump(spec, f)
    result = subprocess.run(["node", os.path.join(html_test.HERE, "html_browser.js"),
                             os.path.join(folder, "spec.json"), out], capture_output=True, text=True, timeout=120)
    self.assertEqual(result.returncode, 0, result.stderr)
    with open(out) as f:
        shown = json.load(f)["pages"][0]
    self.assertEqual(shown["errors"], [])
    focus = shown["focus"][0]
    self.assertEqual(focus["title"], "layer 0, head 1: probabilities (zoomed window, exact cells)")
    for (r, c), tip in zip(cells, focus["tooltips"]):
        if allowed[r, c]:
            self.assertLessEqual(abs(float(tip["value"]) - want[r, c]), step, (r, c, tip))
        else:
            self.assertEqual(tip["value"], "masked")
        self.assertIn(f"query {r0 + r} ", tip["text"])


class ExportHtmlGuiTest(g.AppTestCase):
    SCRATCH = "export-html-gui-"
    wait_export = export_gui.ExportGuiTest.wait_export

    def test_ctrl_shift_h_and_button_write_the_page_equal_to_cli(self):
        folder = os.path.join(self.dir, "pages")
        _, log, window, state = self.start("html", heads=3, head_dim=8, mask="causal", export_dir=folder,
                                           export_formats=["png", "svg"])
        L, S = state["L"], state["S"]
        base = os.path.join(folder, "attention_b0_causal_L%dxS%d" % (L, S))
        self.press(window, "ctrl+shift+h")
        state = self.wait_export(log, 1)
        self.assertEqual(state["last_export"], {"kind": "html", "paths": [base + ".html", base + ".json"], "error": ""})
        self.assertFalse(state["toast"]["error"])
        self.assertIn(os.path.basename(base) + ".html", state["toast"]["text"])
        self.assertEqual(sorted(os.listdir(folder)), sorted(os.path.basename(p) for p in state["last_export"]["paths"]))
        with open(base + ".html", encoding="utf-8") as f:
            page = f.read()
        self.assertIn('class="attnscope-viewer"', page)
        self.assertIn('"H":3', page)

        # The same page as the headless exporter given the JSON written beside it.
        out = g.scratch_dir("cli-html-")
        result = subprocess.run([g.BIN, "export", "--settings", base + ".json", "--out", out],
                                capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual([os.path.basename(p) for p in result.stdout.split()],
                         [os.path.basename(base) + ext for ext in (".html", ".json")])
        with open(os.path.join(out, os.path.basename(base) + ".html"), encoding="utf-8") as f:
            self.assertEqual(f.read(), page)

        # The Controls panel's button (scrolled into view): a second page, never overwriting the first.
        x, y, w, h = state["rects"]["export_folder"]
        self.x.xdotool("mousemove", "--window", window, int(x + w / 2), int(y + h / 2))
        height = state["window"][1]
        for _ in range(10):
            self.x.xdotool("click", "5")  # wheel down over the Controls panel
        state = g.wait_for_state(log, lambda s: s["rects"]["export_html_button"][1] + 19 < height)
        self.click_until(window, log, state["rects"]["export_html_button"], lambda s: s["export_count"] >= 2)
        state = self.wait_export(log, 2)
        self.assertEqual(state["last_export"]["paths"], [base + "_1.html", base + "_1.json"])

    def test_zoomed_window_is_stored_exactly(self):
        check_zoomed_window(self, tiled=False)

    def test_unwritable_folder_writes_nothing(self):
        blocker = os.path.join(self.dir, "a_regular_file")
        with open(blocker, "w") as f:
            f.write("not a folder\n")
        folder = os.path.join(blocker, "pages")
        _, log, window, _ = self.start("unwritable", heads=2, head_dim=8, export_dir=folder)
        self.press(window, "ctrl+shift+h")
        state = self.wait_export(log, 1)
        self.assertEqual(state["last_export"]["kind"], "html")
        self.assertEqual(state["last_export"]["paths"], [])
        self.assertIn(f"export folder {folder} is not writable", state["last_export"]["error"])
        self.assertTrue(state["toast"]["error"])
        self.assertFalse(os.path.exists(folder))


class TiledExportHtmlGuiTest(g.TiledAppTestCase):
    SCRATCH = "export-html-tiled-"
    wait_export = export_gui.ExportGuiTest.wait_export

    def test_zoomed_window_of_a_tiled_run(self):
        check_zoomed_window(self, tiled=True)


if __name__ == "__main__":
    unittest.main()
