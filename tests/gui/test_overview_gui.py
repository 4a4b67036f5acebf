"""Many heads at a glance (issue 20), with random Hugging Face folders the test writes
(Llama-style, tiny D, byte-level BPE): a 12 x 12 folder opens on the layers x heads
overview (144 cells, one per head); colouring by another metric changes the cells' values
(the head table's own numbers) and pixels (the colour table's colour of each value);
clicking a cell focuses that head; the head table's filter keeps the rows its words and
thresholds name. A 32 x 32 folder shows all 1024 cells inside the panel at 1440 x 900. A
long load (ATTNSCOPE_TEST_LOAD_DELAY_MS: a wait after each tensor) shows its progress, and
Escape cancels it: the previous model stays shown, its settings restored."""
import math
import os
import sys
import time
import unittest

import guitest as g

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
import hf_reference as hf  # noqa: E402  (the CLI tests' random-folder writer)


def write_hf(root, name, layers, heads, D, seed):
    folder = os.path.join(root, name)
    cfg, tensors = hf.make_model("llama", seed=seed, V=256, P=256, N=layers, H=heads, D=D, M=32)
    hf.write_folder(folder, cfg, tensors)
    hf.write_byte_level_bpe(folder)
    return folder


def run_of(name):
    """A run of the folder `name` is drawn, nothing pending."""
    return lambda s: g.model_settled(s) and s.get("model_name") == name


def inside(rect, outer):
    x, y, w, h = rect
    ox, oy, ow, oh = outer
    return ox <= x and oy <= y and x + w <= ox + ow and y + h <= oy + oh


def cell_centre(state, layer, head):
    x, y, _, _ = state["rects"]["overview_grid"]
    w, h, gap = state["overview"]["cell"]
    return x + head * (w + gap) + w / 2, y + layer * (h + gap) + h / 2


def table_values(state, metric):
    """{(layer, head): value} of the head table (its own numbers, any order)."""
    t = state["head_table"]
    return {tuple(n): row[metric] for n, row in zip(t["order"], t["values"])}


class OverviewGuiTest(g.AppTestCase):
    SCRATCH = "overview-gui-"

    def start_folder(self, name, folder):
        return self.start(name, folder, ready=run_of(os.path.basename(folder)), source="text", heads=2)

    def expect_cell_colours(self, state, pixels, colours):
        """Each cell's centre pixel is the colour table's colour of its value (viridis) on the
        scale the state log names (the metric's fixed range, or auto)."""
        o = state["overview"]
        low, high = o["scale"]["low"], o["scale"]["high"]
        for layer in range(0, o["rows"], 5):
            for head in range(0, o["cols"], 5):
                v = o["cells"][layer][head]
                index = int((min(max((v - low) / (high - low), 0.0), 1.0)) * 255 + 0.5)
                x, y = cell_centre(state, layer, head)
                got = pixels[int(y)][int(x)]
                want = colours[index]
                self.assertTrue(all(abs(a - b) <= 2 for a, b in zip(got, want)), (layer, head, v, got, want))

    def test_12x12_metric_click_and_filter(self):
        folder = write_hf(self.dir, "hf12", 12, 12, 24, seed=3)
        _, log, window, state = self.start_folder("hf12", folder)
        o = state["overview"]
        self.assertEqual((o["shown"], o["auto"], o["rows"], o["cols"]), (True, True, 12, 12))
        self.assertEqual((state["layers"], state["heads"]), (12, 12))
        self.assertEqual(o["metric"], "entropy_bits")
        self.assertEqual([len(r) for r in o["cells"]], [12] * 12)
        self.assertNotIn("grid_tile_0_0", state["rects"])  # cells, not tiles
        self.assertTrue(inside(state["rects"]["overview_grid"], state["rects"]["overview_panel"]))
        entropy = table_values(state, "entropy_bits")
        for layer in range(12):
            for head in range(12):
                self.assertAlmostEqual(o["cells"][layer][head], entropy[(layer, head)], places=12)
        viridis = g.colour_table("kViridisTable")
        self.assertEqual(state["colormap"], "viridis")
        before = self.capture(window, "overview_entropy.png")[2]
        self.expect_cell_colours(state, before, viridis)

        # Colour by the sink mass: other values (the table's), other pixels.
        state = self.choose_item(window, log, "overview_metric", "overview_metric_sink_mass",
                                 lambda s: s["overview"]["metric"] == "sink_mass" and s["overview"]["cells"])
        sink = table_values(state, "sink_mass")
        cells = state["overview"]["cells"]
        self.assertEqual({(l, h): cells[l][h] for l in range(12) for h in range(12)}, sink)
        self.assertNotEqual(cells, o["cells"])
        self.x.xdotool("mousemove", "--window", window, 120, 6)
        time.sleep(0.5)
        after = self.capture(window, "overview_sink.png")[2]
        grid = state["rects"]["overview_grid"]
        self.assertNotEqual(g.inner_pixels(before, grid), g.inner_pixels(after, grid))
        self.expect_cell_colours(state, after, viridis)

        # Hover previews the head's map; a click focuses it.
        x, y = cell_centre(state, 7, 3)
        self.x.xdotool("mousemove", "--window", window, int(x), int(y))
        hover = g.wait_for_state(log, lambda s: s["overview"]["hovered"] == [7, 3] and "overview_preview" in s["rects"])
        time.sleep(0.4)
        self.screenshot(window, "overview_hover.png")
        self.assertGreater(hover["rects"]["overview_preview"][2], 50)
        state = self.click_until(window, log, [x - 1, y - 1, 2, 2],
                                 lambda s: (s["focused_layer"], s["focused_head"]) == (7, 3))
        self.assertEqual(state["overview"]["shown"], True)

        # The head table's filter: a layer, then a threshold on top of it.
        self.click(window, state["rects"]["metrics_filter"])
        self.x.xdotool("type", "--delay", "40", "L3")
        state = g.wait_for_state(log, lambda s: s["head_table"]["filter"] == "L3")
        self.assertEqual(sorted(map(tuple, state["head_table"]["visible"])), [(3, h) for h in range(12)])
        self.assertEqual(len([k for k in state["rects"] if k.startswith("metrics_row_")]), 12)
        entropy = table_values(state, "entropy_bits")
        cut = sorted(entropy[(3, h)] for h in range(12))[6]
        typed = " entropy>%.4f" % cut
        self.x.xdotool("type", "--delay", "40", typed)
        state = g.wait_for_state(log, lambda s: s["head_table"]["filter"] == "L3" + typed)
        want = [(3, h) for h in range(12) if entropy[(3, h)] > float("%.4f" % cut)]
        self.assertEqual(sorted(map(tuple, state["head_table"]["visible"])), want)
        self.assertTrue(0 < len(want) < 12)
        self.assertEqual(state["head_table"]["filter_error"], "")
        self.screenshot(window, "filtered.png")

    def test_metric_colours_on_the_metrics_own_range(self):
        """Issue 35: on a repeated random word sequence a random model's induction scores are all
        near 0.02. Coloured over induction's own range 0..1 they all look alike (the lowest
        colours); auto range spans their own min and max, prints it and warns that the range is
        narrow. Entropy is coloured against its maximum log2(L) bits."""
        folder = write_hf(self.dir, "hf12i", 12, 12, 24, seed=3)
        words = "amber cloud river stone maple quiet ember lunar"
        text = words + " " + words  # each character one token: the second copy repeats the first
        _, log, window, state = self.start("scales", folder, ready=run_of("hf12i"), source="text", heads=2,
                                           model_text=text)
        self.assertEqual(state["model_text"], text)
        L = state["L"]
        o = state["overview"]
        self.assertEqual((o["metric"], o["scale"]["auto"], o["scale"]["rule"]), ("entropy_bits", False, "0..log2(S)"))
        self.assertAlmostEqual(o["scale"]["low"], 0.0)
        self.assertAlmostEqual(o["scale"]["high"], math.log2(L), places=9)
        self.assertLessEqual(o["high"], math.log2(L))

        state = self.choose_item(window, log, "overview_metric", "overview_metric_induction",
                                 lambda s: s["overview"]["metric"] == "induction" and s["overview"]["cells"])
        o = state["overview"]
        induction = table_values(state, "induction")
        values = [induction[(l, h)] for l in range(12) for h in range(12)]
        self.assertEqual((o["low"], o["high"]), (min(values), max(values)))
        self.assertLess(o["high"] - o["low"], 0.1)  # the narrow spread the issue describes
        self.assertEqual((o["scale"]["auto"], o["scale"]["low"], o["scale"]["high"], o["scale"]["rule"]),
                         (False, 0.0, 1.0, "0..1"))
        self.assertEqual((o["scale"]["narrow"], o["scale"]["warning"]), (False, ""))
        self.assertNotIn("overview_range_warning", state["rects"])
        self.assertIn("colours 0 .. 1 (0..1)", state["texts"]["overview_range"])
        self.x.xdotool("mousemove", "--window", window, 120, 6)
        time.sleep(0.5)
        viridis = g.colour_table("kViridisTable")
        fixed = self.capture(window, "induction_fixed.png")[2]
        self.expect_cell_colours(state, fixed, viridis)
        # On 0..1 every cell is within a few steps of the colour map's lowest colour.
        for layer in range(12):
            for head in range(12):
                index = int(o["cells"][layer][head] * 255 + 0.5)
                self.assertLessEqual(index, int(o["high"] * 255 + 0.5))

        # Auto range: the values' own min and max, printed, with the narrow-range warning.
        state = self.click_until(window, log, state["rects"]["overview_auto_range"],
                                 lambda s: s["overview"]["scale"]["auto"])
        o = state["overview"]
        self.assertEqual((o["scale"]["low"], o["scale"]["high"]), (o["low"], o["high"]))
        self.assertTrue(o["scale"]["narrow"])
        self.assertEqual(o["scale"]["warning"], "narrow range: %.3g .. %.3g is %.2g%% of induction's 0 .. 1, so small "
                         "differences look large" % (o["low"], o["high"], 100 * (o["high"] - o["low"])))
        self.assertIn("overview_range_warning", state["rects"])
        self.assertIn("colours %.3g .. %.3g (auto)" % (o["low"], o["high"]), state["texts"]["overview_range"])
        self.assertTrue(inside(state["rects"]["overview_range_warning"], state["rects"]["overview_panel"]))
        time.sleep(0.5)
        automatic = self.capture(window, "induction_auto.png")[2]
        self.expect_cell_colours(state, automatic, viridis)
        grid = state["rects"]["overview_grid"]
        self.assertNotEqual(g.inner_pixels(fixed, grid), g.inner_pixels(automatic, grid))

    def test_32x32_fits_the_panel(self):
        folder = write_hf(self.dir, "hf32", 32, 32, 64, seed=5)
        _, log, window, state = self.start_folder("hf32", folder)
        o = state["overview"]
        self.assertEqual(state["window"], [1440, 900])
        self.assertEqual((o["shown"], o["rows"], o["cols"]), (True, 32, 32))
        self.assertEqual(sum(len(r) for r in o["cells"]), 1024)
        w, h, gap = o["cell"]
        self.assertGreaterEqual(min(w, h), 3)
        x, y, gw, gh = state["rects"]["overview_grid"]
        self.assertEqual((gw, gh), (32 * (w + gap) - gap, 32 * (h + gap) - gap))  # every cell in the grid
        self.assertTrue(inside(state["rects"]["overview_grid"], state["rects"]["overview_panel"]))
        self.screenshot(window, "overview_1024.png")
        # Focus the last head of the last layer by a click on its cell.
        cx, cy = cell_centre(state, 31, 31)
        self.click_until(window, log, [cx - 1, cy - 1, 2, 2], lambda s: (s["focused_layer"], s["focused_head"]) == (31, 31))

    def test_cancelled_load_keeps_the_previous_model(self):
        small = write_hf(self.dir, "small", 1, 4, 16, seed=7)    # 12 tensors
        large = write_hf(self.dir, "large", 12, 12, 24, seed=8)  # 111 tensors: about 11 s at 100 ms each
        self.x.env["ATTNSCOPE_TEST_LOAD_DELAY_MS"] = "100"
        self.addCleanup(self.x.env.pop, "ATTNSCOPE_TEST_LOAD_DELAY_MS")
        _, log, window, state = self.start_folder("cancel", small)
        shown_tokens = state["query_tokens"]
        # Ctrl+O, the large folder's path, Return.
        self.press(window, "ctrl+o")
        g.wait_for_state(log, lambda s: s["modal_open"] and s["item_active"], timeout=10)
        self.x.xdotool("type", "--delay", "20", large)
        time.sleep(0.3)
        opened = g.line_count(log)  # the small folder's own load must not answer for the large one's
        self.x.xdotool("keydown", "Return")
        time.sleep(0.2)
        self.x.xdotool("keyup", "Return")
        loading = g.wait_for_new_state(log, opened, lambda s: s["loading"] and 0.05 <= s["progress"] < 1 and
                                       not s["modal_open"], timeout=20)
        self.assertEqual(loading["model"], large)
        self.assertIn("load_progress", loading["rects"])
        self.assertIn("load_cancel", loading["rects"])
        self.screenshot(window, "loading.png")
        self.x.xdotool("mousemove", "--window", window, 120, 6)
        n = g.line_count(log)
        self.press(window, "Escape")
        state = g.wait_after(log, n, lambda s: s["load_cancelled"] == large and not s["pending"] and not s["loading"])
        self.assertEqual(state["model"], small)              # the settings are the shown model's again
        self.assertEqual(state["model_name"], "small")       # its maps are still shown
        self.assertEqual((state["layers"], state["heads"]), (1, 4))
        self.assertEqual(state["query_tokens"], shown_tokens)  # no new result replaced them
        self.assertFalse(state["cancelled"])                  # and they are current for the settings
        self.assertEqual(state["progress"], -1)
        self.assertIn("grid_tile_0", state["rects"])  # its one layer of tiles
        self.screenshot(window, "cancelled.png")


if __name__ == "__main__":
    unittest.main()
