"""The compare view (focus panel, "Compare A / B" tab) on the real app under Xvfb.
- Two heads of an attention bundle: max |A - B| and the largest differences match NumPy; then B
  is set to A's head through its combo: every cell of the A - B map is the diverging map's zero
  colour (kDivergingTable[128], read from the colour table source) and max |A - B| = 0.
- The mistakes lab uses it: "difference view" under a floor-division mistake shows buggy - correct
  of the focused head, whose max |A - B| is the lab's own max |dp|; cells masked in both runs are
  hatched, and some allowed cells are not zero."""
import os
import time
import unittest

import numpy as np

import guitest as g


def diverging_zero_colour():
    return g.colour_table("kDivergingTable")[128]  # t = 0.5: index floor(0.5 * 255 + 0.5), as the shader rounds


def write_bundle(folder, layers=2, heads=3, L=7, seed=5):
    os.makedirs(folder)
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(layers, 1, heads, L, L)) * 2
    p = np.exp(x - x.max(-1, keepdims=True))
    p = (p / p.sum(-1, keepdims=True)).astype(np.float32)
    np.save(os.path.join(folder, "attentions.npy"), p)
    with open(os.path.join(folder, "tokens.txt"), "w") as f:
        f.write("\n".join("the cat sat on the red mat".split()[:L]) + "\n")
    return p


def cell_colours(rows, rect, L, S):
    return {(i, j): rows[y][x] for i in range(L) for j in range(S) for x, y in [g.cell_pixel(rect, L, S, i, j)]}


class CompareGuiTest(g.AppTestCase):
    SCRATCH = "compare-gui-"

    def open_compare(self, window, log, state):
        self.click(window, state["rects"]["focus_tab_compare"])
        return g.wait_for_state(log, lambda s: s["focus_tab"] == "compare" and s["compare"] and
                                "compare_diff" in s["rects"])

    def test_two_heads_then_a_head_with_itself(self):
        bundle = os.path.join(self.dir, "maps")
        p = write_bundle(bundle).astype(np.float64)
        _, log, window, state = self.start("heads", bundle)
        state = self.open_compare(window, log, state)
        cmp = state["compare"]
        self.assertEqual((cmp["a"], cmp["b"]), ({"layer": 0, "head": 0, "run": "this"},
                                                {"layer": 0, "head": 1, "run": "this"}))
        diff = p[0, 0, 0] - p[0, 0, 1]
        self.assertAlmostEqual(cmp["abs_max"], np.abs(diff).max(), places=6)
        top = np.argsort(-np.abs(diff), axis=None, kind="stable")[:10]
        self.assertEqual([[i, j] for i, j, *_ in cmp["largest"]], [list(np.unravel_index(k, diff.shape)) for k in top])
        for i, j, a, b, d in cmp["largest"]:
            self.assertAlmostEqual(a, p[0, 0, 0, i, j], places=6)
            self.assertAlmostEqual(b, p[0, 0, 1, i, j], places=6)
            self.assertAlmostEqual(d, diff[i, j], places=6)

        # B := head 0 of layer 0 through the head combo: A - B is zero everywhere.
        self.click(window, state["rects"]["compare_b_head"])
        g.wait_for_state(log, lambda s: "compare_b_head_item_0" in s["rects"])
        time.sleep(0.3)  # a popup is placed one frame after it appears: use its settled rects
        state = g.read_state_log(log)[-1]
        self.click(window, state["rects"]["compare_b_head_item_0"])
        state = g.wait_for_state(log, lambda s: s["compare"] and s["compare"]["b"]["head"] == 0 and
                                 "compare_b_head_item_0" not in s["rects"])
        self.assertEqual(state["compare"]["a"], state["compare"]["b"])
        self.assertEqual(state["compare"]["abs_max"], 0)
        self.assertEqual(state["compare"]["largest"], [])
        L, S = state["L"], state["S"]
        self.x.xdotool("mousemove", 1590, 990)  # no tooltip or crosshair over the maps
        state = g.wait_for_state(log, lambda s: s["hover"] == [-1, -1])
        _, _, rows = self.capture(window, "self.png")
        zero = diverging_zero_colour()
        self.assertEqual(set(cell_colours(rows, state["rects"]["compare_diff"], L, S).values()), {zero})
        self.assertEqual(set(g.inner_pixels(rows, state["rects"]["compare_diff"])), {zero})
        a_px = cell_colours(rows, state["rects"]["compare_a"], L, S)
        self.assertEqual(a_px, cell_colours(rows, state["rects"]["compare_b"], L, S))
        self.assertGreater(len(set(a_px.values())), 3, "the maps are not blank")

    def test_mistakes_lab_difference_view(self):
        _, log, window, state = self.start("mistake", heads=2, head_dim=8, mistake="floor-div-scale", mask="causal")
        self.assertGreater(state["diff_max"], 1e-3)
        self.click(window, state["rects"]["focus_difference_view"])
        state = g.wait_for_state(log, lambda s: s["focus_tab"] == "compare" and s["compare"] and
                                 "compare_diff" in s["rects"])
        cmp = state["compare"]
        self.assertEqual((cmp["a"]["run"], cmp["b"]["run"]), ("this", "correct"))
        self.assertEqual((cmp["a"]["head"], cmp["b"]["head"]), (state["focused_head"],) * 2)
        self.assertAlmostEqual(cmp["abs_max"], state["diff_max"], places=6)
        self.assertGreater(len(cmp["largest"]), 0)
        for i, j, a, b, d in cmp["largest"]:
            self.assertLessEqual(j, i, "causal: masked cells are 0 in both runs")
            self.assertAlmostEqual(d, a - b, places=6)
        self.assertEqual([abs(c[4]) for c in cmp["largest"]], sorted((abs(c[4]) for c in cmp["largest"]), reverse=True))
        self.x.xdotool("mousemove", 1590, 990)
        state = g.wait_for_state(log, lambda s: s["hover"] == [-1, -1])
        L, S = state["L"], state["S"]
        _, _, rows = self.capture(window, "mistake.png")
        px = cell_colours(rows, state["rects"]["compare_diff"], L, S)
        zero = diverging_zero_colour()
        for (i, j), colour in px.items():
            if j > i:
                self.assertIn(colour, g.MASKED, (i, j))
        self.assertTrue(any(c != zero for (i, j), c in px.items() if j <= i), "some allowed cells differ")


if __name__ == "__main__":
    unittest.main()
