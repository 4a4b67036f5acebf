"""Issue 22 item 14: with more heads than fit, clicking a tile scrolls the head metrics table
to that head's row, and clicking a table row scrolls the layer x head grid to its tile (an
attention bundle of 80 layers x 2 heads: neither list shows them all). The state log's
table_scroll / grid_scroll say which heads are fully visible and where each list scrolled."""
import os
import unittest

import guitest as g

LAYERS, HEADS, L = 80, 2, 4


def write_deep_bundle(folder):
    os.makedirs(folder)
    g.save_softmax_maps(folder, (LAYERS, 1, HEADS, L, L), seed=3)
    with open(os.path.join(folder, "tokens.txt"), "w") as f:
        f.write("a\nb\nc\nd\n")


def opened(s):
    return g.settled(s) and s["head_table"] is not None and s["overview"] is not None


def table_ready(s):
    return g.settled(s) and s["head_table"] is not None and s["table_scroll"]["visible"] and s["grid_scroll"]["visible"]


class HeadScrollTest(g.AppTestCase):
    SCRATCH = "head-scroll-"

    def test_tile_and_row_clicks_scroll_the_other_list(self):
        bundle = os.path.join(self.dir, "deep")
        write_deep_bundle(bundle)
        _, log, window, state = self.start("deep", bundle, ready=opened)
        # 160 heads open on the layers x heads overview; its checkbox switches to the tiles.
        if state["overview"]["shown"]:
            state = self.click_until(window, log, state["rects"]["overview_toggle"],
                                     lambda s: not s["overview"]["shown"] and table_ready(s))
        self.assertEqual((state["layers"], state["heads"]), (LAYERS, HEADS))
        self.assertLess(len(state["grid_scroll"]["visible"]), LAYERS * HEADS)  # the grid scrolls
        self.assertLess(len(state["table_scroll"]["visible"]), LAYERS * HEADS)

        # The table sorted by head, reversed: its top rows are the last layers' heads.
        state = self.click_until(window, log, state["rects"]["metrics_header_head"],
                                 lambda s: table_ready(s) and s["head_table"]["descending"]
                                 and (LAYERS * HEADS - 1) in s["table_scroll"]["visible"])
        # A row the table shows whose tile is out of the grid's sight: clicking it scrolls the grid.
        order = [l * HEADS + h for l, h in state["head_table"]["order"]]
        target = next(n for n in state["table_scroll"]["visible"] if n not in state["grid_scroll"]["visible"])
        layer, head = divmod(target, HEADS)
        self.click_until(window, log, state["rects"]["metrics_row_%d" % order.index(target)],
                         lambda s: (s["focused_layer"], s["focused_head"]) == (layer, head), dx=12)
        state = g.wait_for_state(log, lambda s: s["grid_scroll"]["scrolled_to"] == target
                                 and target in s["grid_scroll"]["visible"])
        self.screenshot(window, "grid-scrolled.png")

        # A tile the grid shows whose row is out of the table's sight: clicking it scrolls the table.
        target = next(n for n in state["grid_scroll"]["visible"] if n not in state["table_scroll"]["visible"])
        layer, head = divmod(target, HEADS)
        self.click_until(window, log, state["rects"]["grid_tile_%d_%d" % (layer, head)],
                         lambda s: (s["focused_layer"], s["focused_head"]) == (layer, head))
        state = g.wait_for_state(log, lambda s: s["table_scroll"]["scrolled_to"] == target
                                 and target in s["table_scroll"]["visible"])
        self.assertIn(target, state["grid_scroll"]["visible"])  # the grid stays where it was
        self.screenshot(window, "table-scrolled.png")


if __name__ == "__main__":
    unittest.main()
