"""Exports of the compare view and of query focus (issue 10), on the real app under Xvfb with an
attention bundle written here with NumPy:
- "Export A - B" writes difference_L0H0-L0H1_b0_L7xS7.png, .npy (float32 [L, S], equal to
  A - B computed with NumPy from the same float32 maps, within 1e-7) and .json naming A and B;
- query focus's "Export JSON" writes query_focus_b0_q0,2_mean_L7xS7.json whose bars
  [layers][heads][keys] equal the NumPy mean of the chosen rows within 1e-6."""
import json
import os
import time
import unittest

import numpy as np

import guitest as g
from test_compare_gui import write_bundle


class CompareExportsGuiTest(g.AppTestCase):
    SCRATCH = "compare-exports-gui-"

    def exported(self, window, log, rect, kind):
        state = self.click_until(window, log, rect, lambda s: s["last_export"] and s["last_export"]["kind"] == kind
                                 and not s["exporting"])
        self.assertEqual(state["last_export"]["error"], "")
        return state["last_export"]["paths"]

    def test_difference_and_query_focus_exports(self):
        bundle = os.path.join(self.dir, "maps")
        p = write_bundle(bundle)  # [2, 1, 3, 7, 7] float32
        folder = os.path.join(self.dir, "exports")
        _, log, window, state = self.start("exports", bundle, export_dir=folder)
        state = self.click_until(window, log, state["rects"]["focus_tab_compare"],
                                 lambda s: s["focus_tab"] == "compare" and s["compare"] and "compare_export" in s["rects"])
        paths = self.exported(window, log, state["rects"]["compare_export"], "difference")
        base = os.path.join(folder, "difference_L0H0-L0H1_b0_L7xS7")
        self.assertEqual(paths, [base + ".png", base + ".npy", base + ".json"])
        diff = np.load(base + ".npy")
        self.assertEqual((diff.dtype, diff.shape), (np.float32, (7, 7)))
        np.testing.assert_allclose(diff, p[0, 0, 0] - p[0, 0, 1], atol=1e-7)
        with open(base + ".json") as f:
            meta = json.load(f)
        self.assertEqual((meta["a"], meta["b"]), ({"layer": 0, "head": 0, "run": "this"}, {"layer": 0, "head": 1, "run": "this"}))
        self.assertAlmostEqual(meta["abs_max"], float(np.abs(p[0, 0, 0] - p[0, 0, 1]).max()), places=6)
        width, height, _ = g.read_png(base + ".png")
        self.assertGreater(width * height, 7 * 7)

        # Query focus: query tokens 0 and 2 (Ctrl+click adds the second), mean of their rows.
        state = self.click_until(window, log, state["rects"]["focus_tab_query_focus"],
                                 lambda s: s["focus_tab"] == "query_focus" and "query_token_0" in s["rects"])
        state = self.click_until(window, log, state["rects"]["query_token_0"],
                                 lambda s: s["query_focus"] and s["query_focus"]["queries"] == [0])
        self.x.xdotool("keydown", "ctrl")
        try:
            state = self.click_until(window, log, state["rects"]["query_token_2"],
                                     lambda s: s["query_focus"] and s["query_focus"]["queries"] == [0, 2])
        finally:
            self.x.xdotool("keyup", "ctrl")
        state = g.wait_for_state(log, lambda s: "query_export" in s["rects"] and s["query_focus"]["queries"] == [0, 2])
        paths = self.exported(window, log, state["rects"]["query_export"], "query_focus")
        self.assertEqual(paths, [os.path.join(folder, "query_focus_b0_q0,2_mean_L7xS7.json")])
        with open(paths[0]) as f:
            bars = json.load(f)
        self.assertEqual((bars["batch_item"], bars["queries"], bars["combine"], bars["heads"]), (0, [0, 2], "mean", 3))
        self.assertEqual(bars["query_tokens"], ["the", "sat"])
        self.assertEqual(bars["layers"], ["layer 0", "layer 1"])
        want = p[:, 0, :, [0, 2], :].astype(np.float64).mean(axis=0)  # [layers, H, S]
        np.testing.assert_allclose(np.array(bars["bars"]), want, atol=1e-6)


if __name__ == "__main__":
    unittest.main()
