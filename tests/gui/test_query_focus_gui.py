"""Query focus on the real app under Xvfb, on a 3-layer x 4-head attention bundle: clicking a
query token's row label in the focus view opens the "Query focus" tab with that query's row in
every layer and head as bars (values against NumPy, bar heights by pixels); Ctrl+click on a
second token adds it (mean of the two rows), and "sum" sums them."""
import os
import time
import unittest

import numpy as np

import guitest as g

BAR = (90, 160, 230)  # kBarColor
LAYERS, HEADS, L = 3, 4, 7


def write_bundle(folder, seed=2):
    os.makedirs(folder)
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(LAYERS, 1, HEADS, L, L)) * 2
    x = np.where(np.tril(np.ones((L, L), bool)), x, -np.inf)
    p = np.exp(x - x.max(-1, keepdims=True))
    p = (p / p.sum(-1, keepdims=True)).astype(np.float32)
    np.save(os.path.join(folder, "attentions.npy"), p)
    with open(os.path.join(folder, "tokens.txt"), "w") as f:
        f.write("\n".join("the cat sat on the red mat".split()) + "\n")
    return p.astype(np.float64)[:, 0]  # [layers, H, L, S]


class QueryFocusGuiTest(g.AppTestCase):
    SCRATCH = "query-focus-gui-"

    def assert_bars(self, state, expected):
        bars = np.array(state["query_focus"]["bars"])
        self.assertEqual(bars.shape, (LAYERS, HEADS, L))
        np.testing.assert_allclose(bars, expected, atol=1e-6)

    def test_label_click_ctrl_click_and_sum(self):
        bundle = os.path.join(self.dir, "maps")
        p = write_bundle(bundle)
        _, log, window, state = self.start("qf", bundle)
        # Row label of query 5 ("red"): rows are map_h / L apart, starting at the first label.
        x, y, w, h = state["rects"]["focus_query_label_0"]
        self.click(window, [x, y + 5 * h, w, h])
        state = g.wait_for_state(log, lambda s: s["focus_tab"] == "query_focus" and s["query_focus"] and
                                 s["query_focus"]["queries"] == [5] and "query_chart_2_3" in s["rects"])
        self.assertEqual(state["query_focus"]["combine"], "mean")
        self.assert_bars(state, p[:, :, 5, :])

        # Bars by pixels: chart (0, 0), every key's bar reaches value * chart height.
        self.x.xdotool("mousemove", 1590, 990)
        time.sleep(0.3)
        _, _, rows = self.capture(window, "one.png")
        cx, cy, cw, ch = state["rects"]["query_chart_0_0"]
        bottom = cy + ch
        for j in range(L):
            bar_h = p[0, 0, 5, j] * ch
            xj = int(cx + (j + 0.5) * cw / L)
            if bar_h > 4:
                self.assertEqual(rows[int(bottom - bar_h / 2)][xj], BAR, j)
            if bar_h < ch - 4:
                self.assertNotEqual(rows[int(bottom - bar_h - 3)][xj], BAR, j)

        # Ctrl+click the token "cat" (query 1) in the tab: both rows, averaged; then summed.
        self.x.xdotool("keydown", "ctrl")
        self.click(window, state["rects"]["query_token_1"])
        self.x.xdotool("keyup", "ctrl")
        state = g.wait_for_state(log, lambda s: s["query_focus"] and s["query_focus"]["queries"] == [1, 5])
        self.assert_bars(state, (p[:, :, 1, :] + p[:, :, 5, :]) / 2)
        self.click(window, state["rects"]["query_sum"], dx=8)
        state = g.wait_for_state(log, lambda s: s["query_focus"] and s["query_focus"]["combine"] == "sum")
        self.assert_bars(state, p[:, :, 1, :] + p[:, :, 5, :])

        # A plain click chooses only that token.
        self.click(window, state["rects"]["query_token_3"])
        state = g.wait_for_state(log, lambda s: s["query_focus"] and s["query_focus"]["queries"] == [3])
        self.assert_bars(state, p[:, :, 3, :])


if __name__ == "__main__":
    unittest.main()
