"""Long maps in tiles (issue 9): sizes past the full path's memory are computed in tiles.
ATTNSCOPE_FULL_PATH_BYTES=1 (docs/app.md, "Long maps") sends every run of this X server down the
tiled path, so small maps run fast here. Checked on the real app under Xvfb:
- the overview of every head is named on screen ("overview: 256x256 max-pooled from ..."),
  and its value at a hovered block is the block maximum of `attnscope compute`'s probs;
- zooming computes the window's exact cells off the UI thread: the tooltip's numbers (state
  log hover_exact) equal compute's .npy for that cell, masked cells included, and Ctrl+S
  exports the window's exact cells (.npy equal to compute's window);
- a long overview shows a progress bar over the previous result; Cancel (and Escape) stop
  it, the previous maps stay (marked out of date) and Recompute starts it again."""
import os
import subprocess
import sys
import unittest

import numpy as np

import guitest as g

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import reference as ref  # noqa: E402

N = 300  # more than the overview's 256 rows: the overview pools
META = dict(heads=2, mask="causal")


def wait_after(log, seen, predicate, timeout=30):
    """The first state-log line after the first `seen` lines that satisfies predicate."""
    return g.wait_for_new_state(log, seen, predicate, timeout=timeout)


class LongMapsTest(g.TiledAppTestCase):
    SCRATCH = "long-maps-"

    def setUp(self):
        self.bundle = os.path.join(self.dir, "bundle")
        out = os.path.join(self.dir, "computed")
        if not os.path.exists(out):
            ref.write_bundle(self.bundle, ref.make_case(11, B=1, L=N, D=8), meta=META)
            result = subprocess.run([g.BIN, "compute", self.bundle, "--out", out], capture_output=True, text=True,
                                    timeout=120)
            self.assertEqual(result.returncode, 0, result.stderr)
        self.probs = np.load(os.path.join(out, "probs.npy"))    # [B, H, L, S]
        self.scores = np.load(os.path.join(out, "scores.npy"))  # [B, H, L, S]

    def test_overview_then_zoom_gives_exact_values(self):
        folder = os.path.join(self.dir, "exports")
        _, log, window, state = self.start("tiled", self.bundle, export_dir=folder, export_formats=["png", "npy"],
                                           ready=lambda s: g.settled(s) and s.get("tiled") is not None)
        self.assertEqual(state["error"], "")
        tiled = state["tiled"]
        self.assertEqual((tiled["L"], tiled["S"], tiled["rows"], tiled["cols"]), (N, N, 256, 256))
        self.assertEqual(tiled["note"], "overview: 256x256 max-pooled from %dx%d (every head, in tiles)" % (N, N))
        self.assertEqual(state["zoom_window"], [0, N, 0, N])
        self.screenshot(window, "long_0_overview.png")

        # Whole map: the hovered real cell's overview block holds compute's block maximum.
        rect = state["rects"]["focus_probs"]
        head = state["focused_head"]
        seen = len(g.read_state_log(log))
        self.move_to_cell(window, rect, (0, N, 0, N), 150, 150)
        state = wait_after(log, seen, lambda s: s["map_hover"][0] >= 0)
        i, j = state["map_hover"]
        r, c = state["hover"]
        r0, r1 = g.overview_block(N, r, 256)
        c0, c1 = g.overview_block(N, c, 256)
        self.assertTrue(r0 <= i < r1 and c0 <= j < c1, (i, j, r, c))
        self.assertAlmostEqual(state["hover_prob"], float(self.probs[0, head, r0:r1, c0:c1].max()), delta=1e-6)
        self.assertIsNone(state["hover_exact"])  # not zoomed: no exact tile

        # Wheel up over the diagonal: the window shrinks to about 40 cells; its exact tile comes.
        state = self.zoom_to_exact_tile(log)
        win = state["zoom_window"]
        self.assertTrue(state["tiled"]["note"].startswith("exact cells, computed for this window in"), state["tiled"])
        self.assertEqual(state["focus_axis"]["rows"][0], win[0])
        self.assertEqual(state["focus_axis"]["cols"][0], win[2])
        # The tooltip's exact numbers at an allowed and a masked cell equal compute's (the
        # cell the app reports under the pointer: within a cell of the one aimed at).
        kinds = set()
        for i, j in ((win[0] + win[1] - 4, win[2] + 3), (win[0] + 3, win[2] + win[3] - 4)):
            seen = len(g.read_state_log(log))
            self.move_to_cell(window, state["rects"]["focus_probs"], win, i, j)
            near = lambda s, i=i, j=j: abs(s["map_hover"][0] - i) <= 1 and abs(s["map_hover"][1] - j) <= 1
            hovered = wait_after(log, seen, lambda s: near(s) and s["hover_exact"])
            i, j = hovered["map_hover"]
            exact = hovered["hover_exact"]
            self.assertAlmostEqual(exact["prob"], float(self.probs[0, head, i, j]), delta=1e-6)
            self.assertEqual(exact["allowed"], j <= i)
            if j <= i:
                want = float(self.scores[0, head, i, j])
                self.assertAlmostEqual(exact["score"], want, delta=1e-5 * max(1.0, abs(want)))
            else:
                self.assertIsNone(exact["score"])
                self.assertEqual(exact["prob"], 0.0)
            kinds.add(exact["allowed"])
            self.screenshot(window, "long_1_zoom_tooltip_%s.png" % ("allowed" if exact["allowed"] else "masked"))
        self.assertEqual(kinds, {True, False})

        # Ctrl+S exports the zoomed window's exact cells, named after it: compute's window.
        paths = self.export_zoomed_window(window, log, head, N, win)
        r0, nr, c0, nc = win
        np.testing.assert_allclose(np.load(paths[1]), self.probs[0, head, r0:r0 + nr, c0:c0 + nc], rtol=0, atol=1e-6)
        width, height, _ = g.read_png(paths[0])
        self.assertGreaterEqual(min(width, height), 300)  # a figure of the window, not an empty file

        # 0 resets to the overview.
        self.x.xdotool("mousemove", "--window", window, 120, 6)
        seen = len(g.read_state_log(log))
        self.press(window, "0")
        state = wait_after(log, seen, lambda s: not s["zoomed"])
        self.assertEqual(state["zoom_window"], [0, N, 0, N])
        g.wait_for_state(log, lambda s: not s["zoomed"] and s["zoom_tile"] is None)

    def test_progress_cancel_and_recompute(self):
        first = dict(source="synthetic", synthetic_L=2048, synthetic_S=2048, heads=2, head_dim=8, mask="causal")
        _, log, window, state = self.start("cancel", ready=lambda s: g.settled(s) and s.get("tiled") is not None,
                                           **first)
        self.assertEqual(state["tiled"]["L"], 2048)

        # L = 32768: a long overview. Its progress shows over the previous result (typing
        # applies as it goes: 3, 32, ... each start a run; the last result shown stays).
        seen = len(g.read_state_log(log))
        self.type_into_slider(window, state["rects"]["L_slider"], "32768")
        state = wait_after(log, seen, lambda s: s["settings_L"] == 32768 and not s["item_active"] and
                           s["progress"] >= 0 and "overview_progress" in s["rects"])
        previous = state["tiled"]["L"]
        self.assertNotEqual(previous, 32768)
        self.assertTrue(state["pending"])
        self.assertFalse(state["maps_stale"])
        self.screenshot(window, "long_2_progress.png")

        # Cancel: no new result, the previous maps stay, marked out of date, nothing pending.
        seen = len(g.read_state_log(log))
        self.click(window, state["rects"]["overview_cancel"])
        state = wait_after(log, seen, lambda s: s["cancelled"])
        self.assertEqual(state["progress"], -1)
        self.assertFalse(state["pending"])
        self.assertTrue(state["maps_stale"])
        self.assertEqual(state["error"], "")
        self.assertEqual(state["tiled"]["L"], previous)
        state = g.wait_for_state(log, lambda s: s["cancelled"] and "recompute_button" in s["rects"])
        self.screenshot(window, "long_3_cancelled.png")

        # Recompute starts it again; Escape cancels it too.
        seen = len(g.read_state_log(log))
        self.click(window, state["rects"]["recompute_button"])
        state = wait_after(log, seen, lambda s: s["progress"] >= 0)
        self.assertFalse(state["cancelled"])
        self.x.xdotool("mousemove", "--window", window, 120, 6)
        seen = len(g.read_state_log(log))
        self.press(window, "Escape")
        state = wait_after(log, seen, lambda s: s["cancelled"])
        self.assertFalse(state["pending"])
        self.assertEqual(state["tiled"]["L"], previous)


if __name__ == "__main__":
    unittest.main()
