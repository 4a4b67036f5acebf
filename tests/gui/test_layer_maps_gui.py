"""Rollout and flow as map kinds in the app (issue 10), under Xvfb on an attention bundle of
3 layers written here with NumPy:
- choosing "rollout" builds the maps off the UI thread; the focus view and the grid (one tile
  per layer) draw them. Every cell of the focused map after layer 2 is the viridis colour of
  the NumPy reference's value on the map's [0, max] scale (within one of 256 colour steps),
  so the drawn pixels follow the reference's ordering; Ctrl+S writes rollout_L2_b0_...npy,
  equal to the reference within 1e-6;
- "flow" likewise: its Ctrl+S .npy equals networkx's maximum-flow reference within 1e-5;
- a single-layer source greys both out, with the reason logged (and shown as the tooltip),
  and a click on them changes nothing."""
import os
import sys
import time
import unittest

import numpy as np

import guitest as g

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
from test_analyze import reference_rollout_flow  # noqa: E402  (NumPy + networkx, no attnscope code)

TOKENS = "the cat sat on the red mat".split()


def write_bundle(folder, layers=3, heads=3, L=7, seed=21):
    os.makedirs(folder)
    x = np.random.default_rng(seed).normal(size=(layers, 1, heads, L, L)) * 2.5
    p = np.exp(x - x.max(-1, keepdims=True))
    p = (p / p.sum(-1, keepdims=True)).astype(np.float32)
    np.save(os.path.join(folder, "attentions.npy"), p)
    with open(os.path.join(folder, "tokens.txt"), "w") as f:
        f.write("\n".join(TOKENS[:L]) + "\n")
    return p


class LayerMapsGuiTest(g.AppTestCase):
    SCRATCH = "layer-maps-gui-"

    def choose(self, window, log, state, kind):
        self.click_until(window, log, state["rects"]["map_kind_" + kind], lambda s: s["selected_view"] == kind)
        return g.wait_for_state(log, lambda s: kind in s["layer_maps"]["built"] and s["selected_view"] == kind and
                                "focus_layer_map" in s["rects"] and "grid_%s_2" % kind in s["rects"], timeout=60)

    def export_npy(self, window, log, kind, name):
        seen = len(g.read_state_log(log))
        self.press(window, "ctrl+s")
        state = g.wait_for_new_state(log, seen, lambda s: s["last_export"] and s["last_export"]["kind"] == kind
                                     and not s["exporting"], timeout=30)
        self.assertEqual(state["last_export"]["error"], "")
        names = [os.path.basename(p) for p in state["last_export"]["paths"]]
        self.assertEqual(names, [name + ".png", name + ".npy", name + ".json"])
        return np.load(state["last_export"]["paths"][1])

    def test_rollout_and_flow_of_a_three_layer_bundle(self):
        bundle = os.path.join(self.dir, "maps")
        p = write_bundle(bundle)
        want_rollout, want_flow = reference_rollout_flow(p)
        folder = os.path.join(self.dir, "exports")
        _, log, window, state = self.start("three", bundle, export_dir=folder, export_formats=["png", "npy"],
                                           prob_colormap="viridis")
        self.assertEqual(state["layer_maps"]["unavailable"], {})
        self.assertEqual(state["layer_maps"]["built"], [])
        state = self.choose(window, log, state, "rollout")
        self.assertEqual(state["layer_maps"]["error"], "")
        # Layer 2 through its grid tile.
        self.click_until(window, log, state["rects"]["grid_rollout_2"], lambda s: s["focused_layer"] == 2)
        self.x.xdotool("mousemove", 1590, 990)
        state = g.wait_for_state(log, lambda s: s["hover"] == [-1, -1] and s["focused_layer"] == 2)
        shot = self.screenshot(window, "rollout.png")
        _, _, rows = g.read_png(shot)
        colours = g.colour_table("kViridisTable")
        want = want_rollout[2, 0]
        L = want.shape[0]
        index_of = {c: k for k, c in enumerate(colours)}
        drawn = np.zeros((L, L), dtype=int)
        for i in range(L):
            for j in range(L):
                x, y = g.cell_pixel(state["rects"]["focus_layer_map"], L, L, i, j)
                self.assertIn(rows[y][x], index_of, (i, j))
                drawn[i, j] = index_of[rows[y][x]]
        expected = np.floor(want / want.max() * 255 + 0.5).astype(int)
        self.assertLessEqual(np.abs(drawn - expected).max(), 1, (drawn, expected))
        # The pixels follow the reference's order: sorting cells by colour index sorts them by value.
        order = np.argsort(want, axis=None, kind="stable")
        self.assertTrue(np.all(np.diff(drawn.flatten()[order]) >= -1))
        # Grid tiles of the three layers are drawn and differ (later layers mix more).
        tiles = [g.inner_pixels(rows, state["rects"]["grid_rollout_%d" % l]) for l in range(3)]
        self.assertNotEqual(tiles[0], tiles[2])
        npy = self.export_npy(window, log, "rollout", "rollout_L2_b0_imported_L7xS7")
        self.assertEqual((npy.dtype, npy.shape), (np.float32, (L, L)))
        np.testing.assert_allclose(npy, want, atol=1e-6)

        state = self.choose(window, log, g.read_state_log(log)[-1], "flow")
        self.assertEqual(sorted(state["layer_maps"]["built"]), ["flow", "rollout"])
        self.assertEqual(state["focused_layer"], 2)
        self.screenshot(window, "flow.png")
        npy = self.export_npy(window, log, "flow", "flow_L2_b0_imported_L7xS7")
        np.testing.assert_allclose(npy, want_flow[2, 0], atol=1e-5)

    def test_flow_shows_progress_and_cancels(self):
        # 4 layers at L = 64: flow takes tens of seconds on two cores (docs/cli.md), long enough to cancel.
        bundle = os.path.join(self.dir, "long")
        x = np.random.default_rng(8).normal(size=(4, 1, 2, 64, 64)) * 2
        p = np.exp(x - x.max(-1, keepdims=True))
        os.makedirs(bundle)
        np.save(os.path.join(bundle, "attentions.npy"), (p / p.sum(-1, keepdims=True)).astype(np.float32))
        _, log, window, state = self.start("cancel", bundle)
        state = self.click_until(window, log, state["rects"]["map_kind_flow"], lambda s: s["selected_view"] == "flow")
        state = g.wait_for_state(log, lambda s: s["layer_maps"]["building"] == "flow" and "layer_maps_cancel" in s["rects"])
        self.screenshot(window, "flow_progress.png")
        state = self.click_until(window, log, state["rects"]["layer_maps_cancel"],
                                 lambda s: s["layer_maps"]["building"] is None and s["layer_maps"]["error"] == "flow cancelled"
                                 and "layer_maps_retry" in s["rects"])
        self.assertEqual(state["layer_maps"]["built"], [])
        self.screenshot(window, "flow_cancelled.png")
        # Not restarted on its own; Build again does, and rollout (cheap) still builds meanwhile.
        time.sleep(1.0)
        self.assertIsNone(g.read_state_log(log)[-1]["layer_maps"]["building"])
        self.click_until(window, log, state["rects"]["layer_maps_retry"], lambda s: s["layer_maps"]["building"] == "flow")
        state = self.click_until(window, log, g.read_state_log(log)[-1]["rects"]["map_kind_rollout"],
                                 lambda s: s["selected_view"] == "rollout")
        g.wait_for_state(log, lambda s: s["layer_maps"]["built"] == ["rollout"] and s["layer_maps"]["building"] is None,
                         timeout=60)

    def test_single_layer_source_greys_them_out(self):
        _, log, window, state = self.start("one", heads=2, head_dim=8, mask="causal")
        reason = "rollout and flow combine several layers; this source has 1 layer"
        self.assertEqual(state["layer_maps"]["unavailable"], {"rollout": reason, "flow": reason})
        self.assertIn("map_kind_rollout", state["rects"])
        seen = len(g.read_state_log(log))
        self.click(window, state["rects"]["map_kind_rollout"], dx=6)
        time.sleep(1.0)
        self.x.xdotool("mousemove", "--window", window, int(state["rects"]["map_kind_flow"][0] + 6),
                       int(state["rects"]["map_kind_flow"][1] + state["rects"]["map_kind_flow"][3] / 2))
        time.sleep(1.0)
        self.screenshot(window, "disabled.png")
        for s in g.read_state_log(log)[seen:]:
            self.assertEqual(s["selected_view"], "probs")
            self.assertEqual(s["layer_maps"]["built"], [])
            self.assertIsNone(s["layer_maps"]["building"])


if __name__ == "__main__":
    unittest.main()
