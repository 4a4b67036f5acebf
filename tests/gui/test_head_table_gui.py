"""The head metrics table beside the grid, on the real app under Xvfb: an attention bundle of
6 heads whose sharpness differs, so every head's max_prob (mean row maximum, computed here
with NumPy) is distinct. Clicking the max_prob header sorts the table largest first (again:
smallest first); with "order grid by table" the grid's tiles move to the table's order, checked
by pixels: the tile in each slot after sorting shows, cell for cell, the tile of the head the table
ranks there, as it looked before. Clicking a row focuses that head."""
import os
import unittest

import numpy as np

import guitest as g

SHARPNESS = [1.0, 4.0, 0.3, 2.5, 0.1, 8.0]  # per head: scales the logits, so max_prob differs


def write_bundle(folder, L=8, seed=3):
    """attentions.npy [1, 1, H, L, L]: causal softmax of random logits times SHARPNESS[h];
    returns the per-head max_prob (every row has at least one key)."""
    os.makedirs(folder)
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(1, 1, len(SHARPNESS), L, L)) * np.array(SHARPNESS)[None, None, :, None, None]
    x = np.where(np.tril(np.ones((L, L), bool)), x, -np.inf)
    p = np.exp(x - x.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.save(os.path.join(folder, "attentions.npy"), p.astype(np.float32))
    with open(os.path.join(folder, "tokens.txt"), "w") as f:
        f.write("\n".join("a b c d e f g h".split()[:L]) + "\n")
    return p.astype(np.float32).astype(np.float64)[0, 0].max(-1).mean(-1)  # [H]


def cell_colours(rows, rect, L=8):
    """Colour at the centre of every cell of a tile (cell edges fall between pixels)."""
    return [rows[y][x] for i in range(L) for j in range(L) for x, y in [g.cell_pixel(rect, L, L, i, j)]]


class HeadTableGuiTest(g.AppTestCase):
    SCRATCH = "head-table-gui-"

    def test_sorting_reorders_grid_and_row_click_focuses(self):
        bundle = os.path.join(self.dir, "maps")
        max_prob = write_bundle(bundle)
        H = len(SHARPNESS)
        _, log, window, state = self.start("sort", bundle, ready=lambda s: g.settled(s) and s["head_table"])
        table = state["head_table"]
        self.assertEqual((table["sort_column"], table["descending"], table["order_grid"]), ("head", False, False))
        self.assertEqual(table["order"], [[0, h] for h in range(H)])
        self.assertEqual(len(table["groups"]), H)
        for name in ["metrics_order_grid", "metrics_header_max_prob", "metrics_header_entropy_bits"] + \
                    ["metrics_row_%d" % k for k in range(H)]:
            self.assertIn(name, state["rects"])

        self.click(window, state["rects"]["metrics_order_grid"])
        state = g.wait_for_state(log, lambda s: s["head_table"] and s["head_table"]["order_grid"])
        before = state["rects"]
        _, _, rows = self.capture(window, "before.png")
        tiles_before = {h: cell_colours(rows, before["grid_tile_%d" % h]) for h in range(H)}
        self.assertEqual(len({tuple(t) for t in tiles_before.values()}), H, "every head's tile looks different")

        # First click on a metric header: largest first.
        self.click(window, before["metrics_header_max_prob"])
        state = g.wait_for_state(log, lambda s: s["head_table"] and s["head_table"]["sort_column"] == "max_prob" and
                                 s["head_table"]["descending"])
        expected = [int(h) for h in np.argsort(-max_prob, kind="stable")]
        self.assertEqual(state["head_table"]["order"], [[0, h] for h in expected])
        self.assertNotEqual(expected, list(range(H)))
        after = state["rects"]
        _, _, rows = self.capture(window, "after.png")
        for slot, head in enumerate(expected):
            # Head `head` now sits where slot `slot` (head `slot`) was, and shows its own map.
            self.assertEqual(after["grid_tile_%d" % head], before["grid_tile_%d" % slot], (slot, head))
            self.assertEqual(cell_colours(rows, after["grid_tile_%d" % head]), tiles_before[head], (slot, head))

        # Second click: smallest first.
        self.click(window, after["metrics_header_max_prob"])
        state = g.wait_for_state(log, lambda s: s["head_table"] and s["head_table"]["sort_column"] == "max_prob" and
                                 not s["head_table"]["descending"])
        self.assertEqual(state["head_table"]["order"], [[0, h] for h in expected[::-1]])

        # Clicking a row focuses its head (the last row's: not the focused one).
        order = state["head_table"]["order"]
        target = order[-1][1]
        self.assertNotEqual(target, state["focused_head"])
        self.click(window, state["rects"]["metrics_row_%d" % (len(order) - 1)], dx=12)
        state = g.wait_for_state(log, lambda s: s["focused_head"] == target)
        self.assertEqual(state["focused_layer"], 0)


if __name__ == "__main__":
    unittest.main()
