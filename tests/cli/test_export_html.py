"""`attnscope export ... --format html` in a real browser: Debian's Chromium, headless, driven
by npm's puppeteer-core (installed here into BUILD/npm, never a browser download) through
html_browser.js.

Checks, for a shipped model's run, an imported attention bundle and the sandbox: the page
loads with no console error and no request but its own; the grid has n_layers x H tiles;
clicking a tile shows its map, and the screenshot's pixels at known cells are the core colour
table's colour (core/view/colormap_tables.inc) of the exported values under the app's scale;
the tooltip's value equals the source value (`--format npy`, or the bundle's array) within
the quantization step (the map's range / 65534); the metrics table sorts and focuses a head;
the PNG export and the page show the same colours at the same cells within 1 level per
channel; a 12 x 12 x 256 x 256 bundle stays under 8 MB; an unwritable output path gives one
line, exit 1, nothing written.
"""
import json
import os
import re
import shutil
import subprocess
import unittest

import numpy as np

import reference as ref
from test_export import hex_rgb, svg_cells

try:
    from PIL import Image
except ImportError:  # pragma: no cover - depends on the machine
    Image = None

HERE = os.path.dirname(os.path.abspath(__file__))
CHROMIUM = "/usr/bin/chromium"
PUPPETEER_VERSION = "24.43.1"  # drives Debian 12's Chromium (156) over the DevTools protocol
LEVELS = 65534  # 16-bit codes per map range (65535 = masked)
MODEL = os.path.join(HERE, "../../assets/models/python-code")  # a shipped model
MODEL_TEXT = "def f(x):\n    return f(x) + f(x)\n"
MODEL_L = len(MODEL_TEXT)  # one token per character
BUNDLE_TOKENS = ["<b>", "</script>", "a&b", "\"q\"", "\u00e9t\u00e9", "\u732b", " "]
BUNDLE_KEYS = ["k0", "k1", "'k2'", "k3", "k4", "k5", "k6", "k7", "k8"]


def color_tables():
    """The core's 256-entry colour tables, read from the source the app is built from."""
    path = os.path.join(HERE, "../../core/view/colormap_tables.inc")
    with open(path) as f:
        text = f.read()
    tables = {}
    for name, body in re.findall(r"k(\w+)Table = \{\{(.*?)\}\};", text, re.S):
        tables[name.lower()] = np.array([int(v) for v in re.findall(r"\d+", body)]).reshape(256, 3)
    return tables


TABLES = color_tables()


def color_index(v, low, high):
    """The app's rule: t = clamp((v - low) / (high - low), 0, 1), index = floor(t * 255 + 0.5)."""
    t = np.clip((v - low) / (high - low), 0.0, 1.0) if high > low else 0.5
    return int(np.floor(t * 255 + 0.5))


def ensure_puppeteer():
    """puppeteer-core in BUILD/npm (the build folder: beside the binary), installed once."""
    npm_dir = os.path.join(os.path.dirname(os.path.abspath(ref.BIN)), "npm")
    package = os.path.join(npm_dir, "node_modules", "puppeteer-core", "package.json")
    if os.path.exists(package):
        with open(package) as f:
            if json.load(f)["version"] == PUPPETEER_VERSION:
                return npm_dir
    env = dict(os.environ, PUPPETEER_SKIP_DOWNLOAD="1")
    proc = subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", npm_dir,
                           f"puppeteer-core@{PUPPETEER_VERSION}"], capture_output=True, text=True, env=env,
                          timeout=300)
    if proc.returncode != 0:
        raise AssertionError("npm install puppeteer-core failed:\n" + proc.stderr)
    return npm_dir


def export(*args):
    proc = subprocess.run([ref.BIN, "export", *args], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise AssertionError(f"attnscope export {' '.join(args)} -> {proc.returncode}\n{proc.stderr}")
    return proc.stdout.split("\n")[:-1]


def random_bundle(path, layers, H, L, S, seed, causal=False, tokens=None, key_tokens=None):
    """An attention bundle of softmax rows of random scores; returns the maps [layers, 1, H, L, S]."""
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((layers, 1, H, L, S)) * 2.0
    if causal:
        scores[..., np.triu(np.ones((L, S), bool), 1)] = -np.inf
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs = (probs / probs.sum(-1, keepdims=True)).astype(np.float32)
    os.makedirs(path, exist_ok=True)
    np.save(os.path.join(path, "attentions.npy"), probs)
    for name, labels in (("tokens.txt", tokens), ("key_tokens.txt", key_tokens)):
        if labels:
            with open(os.path.join(path, name), "w", encoding="utf-8") as f:
                f.write("".join(t + "\n" for t in labels))
    return probs


def near_boundary(v, low, high, step):
    """v lies within one quantization step of a colour-index boundary (either index is right)."""
    return color_index(v - step, low, high) != color_index(v + step, low, high)


@unittest.skipIf(not os.path.exists(CHROMIUM) or shutil.which("node") is None or Image is None,
                 "needs chromium, node and PIL (scripts/install-deps.sh --test)")
class HtmlExportInBrowser(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = ref.case_dir("export_html", "browser")
        tmp = cls.tmp
        # A shipped model's run: the page, and the same maps as npy, png and svg.
        cls.model_files = export(MODEL, "--text", MODEL_TEXT, "--what", "probs,scores", "--heads", "all",
                                 "--format", "html,npy,png,svg", "--out", os.path.join(tmp, "model"))
        # An imported attention bundle (tokens that need escaping in HTML and JSON).
        cls.bundle_maps = random_bundle(os.path.join(tmp, "bundle"), 2, 3, 7, 9, seed=5, tokens=BUNDLE_TOKENS,
                                        key_tokens=BUNDLE_KEYS)
        cls.bundle_files = export(os.path.join(tmp, "bundle"), "--format", "html", "--out", os.path.join(tmp, "b"))
        cls.demo_files = export("--demo", "--mask", "causal", "--heads-count", "2", "--format", "html",
                                "--out", os.path.join(tmp, "demo"))
        # 12 layers x 12 heads at L = 256.
        random_bundle(os.path.join(tmp, "big"), 12, 12, 256, 256, seed=7, causal=True)
        cls.big_files = export(os.path.join(tmp, "big"), "--format", "html", "--out", os.path.join(tmp, "bigout"))
        cls.model_page = [p for p in cls.model_files if p.endswith(".html")][0]
        cls.bundle_page = cls.bundle_files[0]
        L = MODEL_L
        spec = {"puppeteer": ensure_puppeteer(), "chromium": CHROMIUM, "pages": [
            {"path": cls.model_page, "shots": tmp, "metrics": True, "focus": [
                {"layer": 1, "head": 3, "kind": 0, "cells": cls.cells(L)},
                {"layer": 0, "head": 1, "kind": 1, "cells": cls.cells(L)}]},
            {"path": cls.bundle_page, "shots": os.path.join(tmp, "b"), "focus": [
                {"layer": 1, "head": 2, "kind": 0, "cells": [[r, c] for r in range(7) for c in range(9)]}]},
            {"path": cls.demo_files[0], "shots": os.path.join(tmp, "demo"), "focus": []},
            {"path": cls.big_files[0], "shots": os.path.join(tmp, "bigout"), "focus": []}],
            "embedded": {"path": cls.bundle_page}}
        with open(os.path.join(tmp, "spec.json"), "w") as f:
            json.dump(spec, f)
        out = os.path.join(tmp, "result.json")
        proc = subprocess.run(["node", os.path.join(HERE, "html_browser.js"), os.path.join(tmp, "spec.json"), out],
                              capture_output=True, text=True, timeout=180)
        if proc.returncode != 0:
            raise AssertionError("html_browser.js failed:\n" + proc.stderr)
        with open(out) as f:
            result = json.load(f)
        cls.model_result, cls.bundle_result, cls.demo_result, cls.big_result = result["pages"]
        cls.notebook = result["notebook"]

    @staticmethod
    def cells(L):
        """Cells spread over an L x L causal map: the diagonal, below it and masked ones."""
        return [[r, c] for r in range(0, L, 3) for c in (0, r // 2, r, min(L - 1, r + 2))]

    def model_npy(self, what, layer, head):
        name = [p for p in self.model_files if p.endswith(".npy") and f"{what}_L{layer}_H{head}_" in p]
        return np.load(name[0]).astype(np.float64)

    def test_files_names_and_size(self):
        self.assertEqual([os.path.basename(p) for p in self.bundle_files],
                         ["attention_b0_imported_L7xS9.html", "attention_b0_imported_L7xS9.json"])
        self.assertIn(f"attention_b0_causal_L{MODEL_L}xS{MODEL_L}.html", [os.path.basename(p) for p in self.model_files])
        self.assertLess(os.path.getsize(self.big_files[0]), 8_000_000)
        for page in (self.model_page, self.bundle_page, self.big_files[0]):
            with open(page, encoding="utf-8") as f:
                text = f.read()
            self.assertNotRegex(text, r"(src|href)=\"(?!data:)")  # nothing fetched
            self.assertNotIn("http", text.replace("http-equiv", ""))

    def test_pages_load_without_errors_or_requests(self):
        for name, result, tiles in (("model", self.model_result, (2, 4)), ("bundle", self.bundle_result, (2, 3)),
                                    ("demo", self.demo_result, (1, 2)), ("big", self.big_result, (12, 12))):
            with self.subTest(page=name):
                self.assertEqual(result["errors"], [])
                self.assertEqual(result["requests"], [])
                layers, H = tiles
                self.assertEqual(sorted(map(tuple, result["tiles"])), [(l, h) for l in range(layers) for h in range(H)])
        self.assertEqual(self.model_result["kinds"], ["probabilities", "scores"])
        self.assertEqual(self.bundle_result["kinds"], ["probabilities"])
        self.assertIn("python-code", self.model_result["caption"])
        self.assertIn("return f(x)", self.model_result["caption"])
        self.assertIn("mask: causal", self.model_result["caption"])
        self.assertRegex(self.model_result["caption"], r"written by attnscope \d+\.\d+\.\d+")
        self.assertIn(f"L {MODEL_L} \u00d7 S {MODEL_L}", self.model_result["caption"])
        self.assertRegex(self.big_result["pooling"], r"^(maps pooled from 256 \u00d7 256 to \d+ \u00d7 \d+ cells.*)?$")

    def test_page_works_inlined_and_in_an_iframe_as_in_jupyter(self):
        # IPython.display.HTML(content) twice on one notebook, and IPython.display.IFrame(path).
        self.assertEqual(self.notebook["errors"], [])
        self.assertEqual(self.notebook["requests"], [])
        self.assertEqual(self.notebook["inline_tiles"], [2 * 3, 2 * 3])
        self.assertEqual(self.notebook["iframe_tiles"], 2 * 3)

    def check_tooltips(self, focus, values, allowed, labels=None):
        step = (values[allowed].max() - values[allowed].min()) / LEVELS
        for (r, c), tip in zip(self.focus_cells(focus), focus["tooltips"]):
            self.assertFalse(tip["hidden"])
            self.assertEqual((tip["row"], tip["col"]), (r, c))
            if not allowed[r, c]:
                self.assertEqual(tip["value"], "masked")
                continue
            self.assertLessEqual(abs(float(tip["value"]) - values[r, c]), step, (r, c, tip, values[r, c]))
            if labels:
                self.assertIn(f"query {r} '{labels[0][r]}'", tip["text"])
                self.assertIn(f"key {c} '{labels[1][c]}'", tip["text"])

    def focus_cells(self, focus):
        return [(t["row"], t["col"]) for t in focus["tooltips"]]

    def check_pixels(self, focus, values, allowed, table, low, high):
        """Screenshot pixels at the cells = the table colour of the value (a neighbour only
        when the value is within a quantization step of an index boundary)."""
        g = focus["geometry"]
        shot = Image.open(focus["shot"]).convert("RGB")
        step = (values[allowed].max() - values[allowed].min()) / LEVELS
        for r, c in self.focus_cells(focus):
            got = shot.getpixel((int(g["x0"] + (c + 0.5) * g["cellPx"]), int(g["y0"] + (r + 0.5) * g["cellPx"])))
            if not allowed[r, c]:
                self.assertEqual(got, (160, 160, 160) if (r + c) % 2 == 0 else (128, 128, 128))
                continue
            index = color_index(values[r, c], low, high)
            options = {index - 1, index, index + 1} if near_boundary(values[r, c], low, high, step) else {index}
            self.assertIn(got, [tuple(table[i]) for i in options if 0 <= i < 256], (r, c, values[r, c]))

    def test_model_tooltips_and_pixels(self):
        causal = np.tril(np.ones((MODEL_L, MODEL_L), bool))

        def layer_probs_range(layer):  # the app's probability scale: [0, max over the layer's heads]
            return 0.0, max(self.model_npy("probs", layer, h)[causal].max() for h in range(4))

        def scores_range(values):  # the app's score scale: +-max|v| of the map's allowed cells
            bound = np.abs(values[causal]).max()
            return -bound, bound

        # focus (as html_browser.js clicked it), title, exported npy, layer, head, table, scale
        cases = [(0, "layer 1, head 3: probabilities", "probs", 1, 3, "viridis", lambda v: layer_probs_range(1)),
                 (1, "layer 0, head 1: scores", "scores", 0, 1, "diverging", scores_range)]
        for index, title, what, layer, head, table, scale in cases:
            with self.subTest(what=what):
                focus = self.model_result["focus"][index]
                self.assertEqual(focus["title"], title)
                values = self.model_npy(what, layer, head)
                self.check_tooltips(focus, values, causal)
                self.check_pixels(focus, values, causal, TABLES[table], *scale(values))
        # Each tooltip ends with the model's guesses after its query position (the page's data).
        rows = page_data(self.model_page)["predictions"]["rows"]
        for tip in self.model_result["focus"][0]["tooltips"]:
            label, p = rows[tip["row"]]["top"][0]
            self.assertIn("\nnext: '%s' %s%%, " % (label, "%.3g" % (100 * p)), tip["text"])

    def test_bundle_tooltip_is_the_source_value_with_its_tokens(self):
        focus = self.bundle_result["focus"][0]
        values = self.bundle_maps[1, 0, 2].astype(np.float64)
        every = np.ones(values.shape, bool)
        self.check_tooltips(focus, values, every, (BUNDLE_TOKENS, BUNDLE_KEYS))
        self.check_pixels(focus, values, every, TABLES["viridis"], 0.0, float(self.bundle_maps[1, 0].max()))

    def test_png_and_html_show_the_same_colours(self):
        focus = self.model_result["focus"][0]
        g = focus["geometry"]
        svg = [p for p in self.model_files if p.endswith(".svg") and "probs_L1_H3_" in p][0]
        png = Image.open(svg[:-4] + ".png").convert("RGB")
        shot = Image.open(focus["shot"]).convert("RGB")
        cells = svg_cells(svg)
        self.assertEqual(len(cells), MODEL_L * MODEL_L)
        self.assertEqual(cells[0][2], g["cellPx"])  # the same cell size as the PNG export
        values = self.model_npy("probs", 1, 3)
        layer_max = max(self.model_npy("probs", 1, h).max() for h in range(4))
        step = values.max() / LEVELS
        boundary_cells = 0
        for n, (x, y, size, fill) in enumerate(cells):
            r, c = divmod(n, MODEL_L)
            want = png.getpixel((x + size // 2, y + size // 2))
            self.assertEqual(want, hex_rgb(fill))
            got = shot.getpixel((int(g["x0"] + (c + 0.5) * g["cellPx"]), int(g["y0"] + (r + 0.5) * g["cellPx"])))
            if c <= r and near_boundary(values[r, c], 0.0, layer_max, step):
                boundary_cells += 1
                continue  # either neighbour is right (checked in test_model_tooltips_and_pixels)
            self.assertLessEqual(max(abs(a - b) for a, b in zip(got, want)), 1, (r, c, got, want))
        self.assertLess(boundary_cells, 5)

    def test_metrics_table_sorts_and_focuses(self):
        m = self.model_result["metrics"]
        self.assertEqual(m["headers"][:3], ["head", "group", "entropy_bits"])
        down = [float(row["text"]) for row in m["descending"]]
        up = [float(row["text"]) for row in m["ascending"]]
        self.assertEqual(down, sorted(down, reverse=True))
        self.assertEqual(up, sorted(up))
        self.assertEqual(len(down), 8)
        clicked = m["clicked"]
        self.assertEqual(m["focusedTile"], [clicked["layer"], clicked["head"]])
        self.assertTrue(m["title"].startswith(f"layer {clicked['layer']}, head {clicked['head']}:"))


def page_data(path):
    """The data a page embeds (the JSON in its <script class="av-data">; "</" written "<\\/")."""
    with open(path, encoding="utf-8") as f:
        found = re.search(r'<script type="application/json" class="av-data">(.*?)</script>', f.read(), re.S)
    return json.loads(found.group(1))


class HtmlPageData(unittest.TestCase):
    """What a page holds besides the maps: a model run's predictions and logit lens, and the
    labels of pooled rows (no browser needed)."""

    @classmethod
    def setUpClass(cls):
        tmp = ref.case_dir("export_html", "page_data")
        page = [p for p in export(MODEL, "--text", MODEL_TEXT, "--format", "html", "--out", os.path.join(tmp, "page"))
                if p.endswith(".html")][0]
        cls.data = page_data(page)
        cls.run_dir = os.path.join(tmp, "run")
        proc = subprocess.run([ref.BIN, "model", "run", MODEL, "--text", MODEL_TEXT, "--lens", "--out", cls.run_dir],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr

    def test_predictions_are_the_softmax_of_the_runs_logits(self):
        logits = np.load(os.path.join(self.run_dir, "logits.npy")).astype(np.float64)  # [L, V]
        rows = self.data["predictions"]["rows"]
        self.assertEqual(len(rows), MODEL_L)
        self.assertFalse(self.data["predictions"]["encoder"])
        for t, row in enumerate(rows):
            p = np.exp(logits[t] - logits[t].max())
            p /= p.sum()
            want = np.sort(p)[::-1][:5]
            got = [prob for _, prob in row["top"]]
            np.testing.assert_allclose(got, want, atol=1e-6, err_msg=f"position {t}")
            self.assertEqual(row["actual"], "" if t + 1 == MODEL_L else row["actual"])
        self.assertEqual(rows[0]["actual"], MODEL_TEXT[1])

    def test_lens_is_the_best_guess_of_model_run_lens(self):
        ids = np.load(os.path.join(self.run_dir, "lens_ids.npy"))      # [N + 1, L, 5]
        probs = np.load(os.path.join(self.run_dir, "lens_probs.npy"))  # [N + 1, L, 5]
        top = self.data["lens"]["top"]
        self.assertEqual((len(top), len(top[0])), ids.shape[:2])
        for layer in range(ids.shape[0]):
            for t in range(ids.shape[1]):
                self.assertAlmostEqual(top[layer][t][1], float(probs[layer, t, 0]), delta=1e-6)

    def test_long_text_says_why_the_lens_is_left_out(self):
        tmp = ref.case_dir("export_html", "page_long")
        text = (MODEL_TEXT * 4)[:120]
        proc = subprocess.run([ref.BIN, "export", MODEL, "--text", text, "--format", "html", "--out", tmp,
                               "--layers", "0"], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "ATTNSCOPE_TEST_LENS_BUDGET": "1000"})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        data = page_data([os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith(".html")][0])
        self.assertIn("logit lens off: 120 tokens", data["lens"]["note"])
        self.assertIn("attnscope model run --lens", data["lens"]["note"])
        self.assertEqual(len(data["predictions"]["rows"]), 120)

    def test_a_long_model_text_is_pooled_as_made_with_its_tokens_and_predictions(self):
        """An HTML-only export of more than 256 tokens takes the tiled path (maps pooled as they are
        made): the page names the overview, labels each pooled row with the real positions it
        covers and their first token, and keeps every position's predictions."""
        import hf_reference as hf
        tmp = ref.case_dir("export_html", "long_model")
        folder = os.path.join(tmp, "gpt2")
        cfg, tensors = hf.make_model("gpt2", seed=5, V=256, P=512)
        hf.write_folder(folder, cfg, tensors)
        hf.write_byte_level_bpe(folder)
        text = ("the quick brown fox jumps over the lazy dog " * 8)[:300]
        page = export(folder, "--text", text, "--format", "html", "--out", os.path.join(tmp, "page"))[0]
        data = page_data(page)
        self.assertIn("overview of L 300", data["pooling"])
        run = os.path.join(tmp, "run")
        proc = subprocess.run([ref.BIN, "model", "run", folder, "--text", text, "--out", run], capture_output=True,
                              text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(os.path.join(run, "tokens.txt"), encoding="utf-8") as f:
            labels = [line.split("\t")[2] for line in f.read().splitlines()]
        firsts = data["row_positions"]
        self.assertEqual((firsts[0], firsts[-1], len(firsts)), (0, 300, data["rows"] + 1))
        for r, label in enumerate(data["row_labels"]):
            first, last = firsts[r], firsts[r + 1] - 1
            span = str(first) if first == last else f"{first}-{last}"
            self.assertEqual(label, f"{span} '{labels[first]}'")
        logits = np.load(os.path.join(run, "logits.npy")).astype(np.float64)
        rows = data["predictions"]["rows"]
        self.assertEqual(len(rows), 300)
        for t in (0, 150, 299):
            p = np.exp(logits[t] - logits[t].max())
            self.assertAlmostEqual(rows[t]["top"][0][1], p.max() / p.sum(), delta=1e-6)

    def test_pooled_rows_are_labelled_with_their_first_token(self):
        tmp = ref.case_dir("export_html", "pooled_labels")
        tokens = ["t%d" % i for i in range(300)]
        random_bundle(os.path.join(tmp, "bundle"), 1, 2, 300, 300, seed=3, causal=True, tokens=tokens)
        page = export(os.path.join(tmp, "bundle"), "--format", "html", "--out", os.path.join(tmp, "out"))[0]
        data = page_data(page)
        rows = data["rows"]
        self.assertLess(rows, 300)
        self.assertIsNone(data["predictions"])
        for r, label in enumerate(data["row_labels"]):
            first, last = r * 300 // rows, (r + 1) * 300 // rows - 1
            span = str(first) if first == last else f"{first}-{last}"
            self.assertEqual(label, f"{span} '{tokens[first]}'")


class HtmlExportErrors(unittest.TestCase):
    def test_unwritable_output_path(self):
        tmp = ref.case_dir("export_html", "unwritable")
        blocker = os.path.join(tmp, "a-file")
        with open(blocker, "w") as f:
            f.write("not a folder\n")
        for out in (os.path.join(blocker, "sub"), "/proc/attnscope-html"):
            with self.subTest(out=out):
                proc = subprocess.run([ref.BIN, "export", "--demo", "--format", "html", "--out", out],
                                      capture_output=True, text=True, timeout=60)
                self.assertEqual(proc.returncode, 1, proc.stderr)
                self.assertEqual(len(proc.stderr.splitlines()), 1, proc.stderr)
                self.assertIn(f"export folder {out} is not writable", proc.stderr)
                self.assertEqual(proc.stdout, "")
        self.assertEqual(os.listdir(tmp), ["a-file"])

    def test_settings_written_beside_the_page_reexport_the_same_page(self):
        tmp = ref.case_dir("export_html", "settings")
        first = export("--demo", "--mask", "causal", "--format", "html", "--out", os.path.join(tmp, "a"))
        again = export("--settings", first[1], "--out", os.path.join(tmp, "b"))
        self.assertEqual([os.path.basename(p) for p in again], [os.path.basename(p) for p in first])
        with open(first[0], "rb") as a, open(again[0], "rb") as b:
            self.assertEqual(a.read(), b.read())


if __name__ == "__main__":
    unittest.main()
