"""Issue 37, the app's patching view (the focus panel's Patching tab): the corrupt text beside
the text box (its length against the clean one's: "26 of 26 tokens", or why not), the answer and
the wrong token picked from the predictions or typed (a text that is not one token names its
pieces), a new sweep after an edit of either text, both tables of the normalised effect in the state log and on screen, their export as
PNG, CSV and HTML (captions naming the model, the texts and the tokens), and the inputs kept in
the settings across closing and reopening the app.

The sweep's numbers are checked against `attnscope model patch` on the same texts and ids (the
core patching that tests/cli/test_interventions.py checks against a float64 reference) and the
normalisation against NumPy."""
import csv
import glob
import html.parser
import json
import os
import subprocess
import time

import numpy as np

import guitest as g

CLEAN = "x = foo(a, b)\ny = foo(a, b"
CORRUPT = CLEAN[:-1] + "q"
model_settled = g.model_settled


def ran(state):
    """A model run is shown and nothing is pending (on any focus tab: model_settled wants the maps tab's rects)."""
    return state["generation"] > 0 and not state["pending"] and state["view_source"] == "model run" and state["error"] == ""


def swept(job):
    """The sweep posted as job `job` or later is shown."""
    return lambda s: (s["patching"].get("result_job", 0) >= job and not s["patching"]["running"]
                      and "sweep" in s["patching"])


class TableCells(html.parser.HTMLParser):
    """The data-value of every cell of an exported table page, and its text."""
    def __init__(self):
        super().__init__()
        self.values, self.text = [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "td" and "data-value" in attrs:
            self.values.append(float(attrs["data-value"]))

    def handle_data(self, data):
        self.text.append(data)


class PatchingTest(g.AppTestCase):
    SCRATCH = "patching-"

    def click_after(self, window, log, rect, predicate):
        return self.click_until(window, log, rect, lambda s: ran(s) and predicate(s))

    def hold(self, key):
        """A key held for a few frames: a press and release in one frame can be lost."""
        self.x.xdotool("keydown", key)
        time.sleep(0.12)
        self.x.xdotool("keyup", key)
        time.sleep(0.1)

    def type_at_box_end(self, window, rect, key=None, text=""):
        """A click at a text box's end (its bottom right), then a key held or text typed."""
        x, y, w, h = rect
        self.x.xdotool("mousemove", "--window", window, int(x + w - 8), int(y + h - 6))
        self.x.xdotool("click", 1)
        time.sleep(0.2)
        if key:
            self.hold(key)
        if text:
            self.x.xdotool("type", "--delay", "60", text)
        self.x.xdotool("mousemove", "--window", window, 120, 6)

    def replace_text(self, window, log, rect, text, predicate):
        """Replaces a text box's content with `text` (one line: a click into it, Ctrl+A, typing)
        until a state line after it matches predicate: a lost key is typed again, the result the same."""
        for _ in range(3):
            seen = g.line_count(log)
            x, y, w, h = rect
            self.x.xdotool("mousemove", "--window", window, int(x + w - 8), int(y + h - 6))
            self.x.xdotool("click", 1)
            time.sleep(0.2)
            self.hold("ctrl+a")
            self.x.xdotool("type", "--delay", "60", text)
            self.x.xdotool("mousemove", "--window", window, 120, 6)
            try:
                return g.wait_after(log, seen, predicate, timeout=10)
            except AssertionError:
                pass
        return g.wait_after(log, seen, predicate, timeout=1)

    def test_patching_view(self):
        exports = os.path.join(self.dir, "exports")
        app, log, window, state = self.start("patching", ready=model_settled, source="model", model="python-code",
                                           model_text=CLEAN, export_dir=exports)
        L = state["L"]
        self.assertEqual(L, len(CLEAN))
        state = self.click_after(window, log, state["rects"]["focus_tab_patching"],
                                 lambda s: s["focus_tab"] == "patching" and "patching_copy_clean" in s["rects"])
        state = self.click_after(window, log, state["rects"]["patching_copy_clean"],
                                 lambda s: s["patching"]["corrupt"] == CLEAN
                                 and s["patching"].get("length") == "%d of %d tokens" % (L, L))
        self.assertIn("pick the answer token", state["patching"]["why_not"])

        # One character less: unequal, explained; then the last character replaced: equal again.
        box = state["rects"]["patching_corrupt_box"]
        seen = g.line_count(log)
        self.type_at_box_end(window, box, key="BackSpace")
        state = g.wait_after(log, seen, lambda s: s["patching"].get("length", "").startswith("%d of %d" % (L - 1, L)))
        self.assertEqual(state["patching"]["length"], "%d of %d tokens: the corrupt text needs %d, as many as the "
                         "clean one, to be patched position by position" % (L - 1, L, L))
        self.assertIn("patching needs two texts of equal length", state["patching"]["why_not"])
        self.assertIn("patching_length", state["rects"])
        self.screenshot(window, "unequal.png")
        seen = g.line_count(log)
        self.type_at_box_end(window, box, text="q")
        state = g.wait_after(log, seen, lambda s: s["patching"]["corrupt"] == CORRUPT
                             and s["patching"].get("length") == "%d of %d tokens" % (L, L))

        # Answer and wrong from the predictions after the clean text.
        picks = state["patching"]["picks"]
        self.assertEqual(len(picks), 5)
        state = self.click_after(window, log, state["rects"]["patching_pick_answer_0"],
                                 lambda s: s["patching"]["answer"] != "")
        state = self.click_after(window, log, state["rects"]["patching_pick_wrong_1"],
                                 lambda s: s["patching"]["wrong"] != "")
        state = g.wait_for_state(log, lambda s: ran(s) and swept(state["patching"]["job"])(s), timeout=30)
        p = state["patching"]
        sweep = p["sweep"]
        self.assertEqual(p["why_not"], "")
        self.assertEqual((sweep["answer_id"], sweep["wrong_id"]), (picks[0]["id"], picks[1]["id"]))
        self.assertEqual((sweep["clean"], sweep["corrupt"], sweep["model"]), (CLEAN, CORRUPT, "python-code"))
        heads, resid = np.array(sweep["patch_heads"]), np.array(sweep["patch_resid"])
        self.assertEqual(heads.shape, (2, 4))
        self.assertEqual(resid.shape, (2, L))
        clean, corrupt = sweep["clean_metric"], sweep["corrupt_metric"]
        self.assertGreater(abs(clean - corrupt), 1e-3)
        for raw, shown in [(heads, sweep["patch_heads_normalised"]), (resid, sweep["patch_resid_normalised"])]:
            np.testing.assert_allclose(np.array(shown), (raw - corrupt) / (clean - corrupt), rtol=1e-4, atol=1e-5)
        # Patching the clean residual into every position of layer 0 is the clean run: 1 at the last position,
        # 0 where the texts agree.
        self.assertAlmostEqual(sweep["patch_resid_normalised"][0][L - 1], 1.0, places=3)
        np.testing.assert_allclose(sweep["patch_resid_normalised"][0][:L - 1], 0.0, atol=1e-4)

        out = os.path.join(self.dir, "cli-patch")
        model = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "assets", "models", "python-code")
        result = subprocess.run([g.BIN, "model", "patch", model, "--clean", CLEAN, "--corrupt", CORRUPT,
                                 "--answer-id", str(picks[0]["id"]), "--wrong-id", str(picks[1]["id"]), "--out", out],
                                capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        np.testing.assert_allclose(heads, np.load(os.path.join(out, "patch_heads.npy")), atol=1e-4, rtol=0)
        np.testing.assert_allclose(resid, np.load(os.path.join(out, "patch_resid.npy")), atol=1e-4, rtol=0)

        # On screen: both tables and the colour scale; a head cell in its diverging colour.
        for name in ["patching_heads", "patching_resid", "patching_colorbar", "patching_export"]:
            self.assertIn(name, state["rects"])
        shot = g.read_png(self.screenshot(window, "tables.png"))
        table = g.colour_table("kDivergingTable")
        rng = p["range"]
        for (i, j) in [(0, 0), (1, 3)]:
            v = sweep["patch_heads_normalised"][i][j]
            colour = table[int(np.floor(min(max((v + rng) / (2 * rng), 0.0), 1.0) * 255 + 0.5))]
            x, y = g.cell_pixel(state["rects"]["patching_heads"], 2, 4, i, j)
            self.assertLessEqual(max(abs(a - b) for a, b in zip(shot[2][y][x], colour)), 3, (i, j, v))

        # A typed answer that is two tokens names them.
        state = self.replace_text(window, log, state["rects"]["patching_answer_box"], "ab",
                                  lambda s: s["patching"]["answer"] == "ab"
                                  and s["patching"].get("why_not", "").startswith('answer "ab"'))
        self.assertEqual(state["patching"]["why_not"],
                         "answer \"ab\": it is 2 tokens of python-code's vocabulary ('a', 'b'), not one")
        self.assertNotIn("sweep", state["patching"])
        state = self.click_after(window, log, state["rects"]["patching_pick_answer_0"],
                                 lambda s: swept(s["patching"]["job"])(s) and s["patching"]["answer"] != "ab")
        self.assertEqual(state["patching"]["sweep"]["patch_heads"], sweep["patch_heads"])
        answer, wrong = state["patching"]["answer"], state["patching"]["wrong"]

        # Export: PNG, CSV and HTML of each table, with the sweep's JSON.
        state = self.click_after(window, log, state["rects"]["patching_export"],
                                 lambda s: s["export_count"] == 2 and not s["exporting"])
        for name, values, cols in [("patch_heads_L2x4", sweep["patch_heads_normalised"], ["H0", "H1", "H2", "H3"]),
                                   ("patch_resid_L2x%d" % L, sweep["patch_resid_normalised"], None)]:
            files = sorted(os.path.basename(f) for f in glob.glob(os.path.join(exports, name + ".*")))
            self.assertEqual(files, [name + ext for ext in [".csv", ".html", ".json", ".png"]])
            width, height, _ = g.read_png(os.path.join(exports, name + ".png"))
            self.assertGreater(width * height, 0)
            with open(os.path.join(exports, name + ".csv"), newline="", encoding="utf-8") as f:
                rows = list(csv.reader(f))
            if cols:
                self.assertEqual(rows[0][1:], cols)
            self.assertEqual([r[0] for r in rows[1:]], ["L0", "L1"])
            np.testing.assert_allclose(np.array([[float(c) for c in r[1:]] for r in rows[1:]]), values, rtol=1e-6)
            page = TableCells()
            with open(os.path.join(exports, name + ".html"), encoding="utf-8") as f:
                page.feed(f.read())
            np.testing.assert_allclose(page.values, np.ravel(values), rtol=1e-6)
            caption = "".join(page.text)
            for part in ["python-code", "x = foo(a, b)\\ny = foo(a, b\"", "y = foo(a, q\"", "answer '", "wrong '"]:
                self.assertIn(part, caption)
            with open(os.path.join(exports, name + ".json"), encoding="utf-8") as f:
                self.assertEqual(json.load(f)["corrupt"], CORRUPT)

        # An edit of the clean text (the text box) sweeps again: now one token longer than the corrupt one.
        seen = g.line_count(log)
        self.type_at_text_end(window, state, "z")
        state = g.wait_after(log, seen, lambda s: s["patching"].get("length", "").startswith("%d of %d tokens:" % (L, L + 1)))
        self.assertIn("patching needs two texts of equal length", state["patching"]["why_not"])

        # Close and reopen: the corrupt text and the tokens are settings.
        self.stop(app)
        with open(os.path.join(self.x.env["XDG_CONFIG_HOME"], "attnscope", "settings.json")) as f:
            saved = json.load(f)
        self.assertEqual((saved["patch_corrupt"], saved["patch_answer"], saved["patch_wrong"]), (CORRUPT, answer, wrong))
        log2 = os.path.join(self.dir, "reopened.log")
        reopened = self.x.start("--state-log", log2)
        self.addCleanup(self.stop, reopened)
        state = g.wait_for_state(log2, lambda s: ran(s) and s["patching"]["corrupt"] == CORRUPT, timeout=60)
        self.assertEqual((state["patching"]["answer"], state["patching"]["wrong"]), (answer, wrong))


if __name__ == "__main__":
    import unittest
    unittest.main()
