"""Visible state (issue 12): a failed recompute marks the maps on screen as out of date (a
dimmed overlay with the error written on the maps themselves, and in the status bar), and
headers never overlap: a long mask string wraps beside the mask panel's Export button, a long
error in the status bar stops short of its F1 hint, the query-focus chart titles of a 12 x 12
attention bundle shorten instead of running into each other, the grid's Export button stays
clear of the colour bar's top label, and in a 1280x800 window the focus map titles of the
mistakes lab and the grouped-query grid labels ("head 1  kv 0") stay over their own map."""
import os
import time
import unittest

import numpy as np

import guitest


def overlaps(a, b):
    """Rectangles [x, y, w, h] share at least one pixel."""
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


class StaleMaps(guitest.AppTestCase):
    SCRATCH = "gui-stale-"

    def click_until(self, window, log, rect, predicate):
        """Clicks rect until the state log matches predicate (on a busy machine a frame can
        miss a click: ImGui 1.86 needs the pointer seen over the button before the press)."""
        x, y, w, h = rect
        seen = len(guitest.read_state_log(log))
        for _ in range(6):
            self.x.xdotool("mousemove", "--window", window, int(x + 8), int(y + h / 2))
            time.sleep(0.3)
            self.x.xdotool("click", "1")
            self.x.xdotool("mousemove", "--window", window, 120, 6)  # no hover crosshair on the maps
            try:
                return guitest.wait_for_new_state(log, seen, predicate, timeout=5)
            except AssertionError:
                pass
        return guitest.wait_for_new_state(log, seen, predicate, timeout=1)

    def test_failed_recompute_dims_the_maps_and_shows_the_error(self):
        app, log, window, state = self.start("stale", text="one two three four five six")
        self.assertFalse(state["maps_stale"])
        rect = state["rects"]["focus_probs"]
        _, _, before = self.capture(window, "stale_before.png")
        # "bundle" with no folder chosen: the recompute fails, the old maps stay on screen.
        seen = len(guitest.read_state_log(log))
        self.click_until(window, log, state["rects"]["source_bundle"], lambda s: s["source"] == "bundle")
        state = guitest.wait_for_new_state(log, seen, lambda s: s["maps_stale"] and not s["pending"])
        self.assertIn("no bundle directory chosen", state["error"])
        _, _, after = self.capture(window, "stale_after.png")
        L, S = state["L"], state["S"]
        # Every cell centre below the error text is dimmed: far darker than before.
        for i in range(L):
            for j in range(S):
                px, py = guitest.cell_pixel(rect, L, S, i, j)
                if py < rect[1] + 40:
                    continue  # the error text runs across the top
                old, new = sum(before[py][px]), sum(after[py][px])
                self.assertLess(new, 0.45 * old + 30, (i, j, before[py][px], after[py][px]))
        # The error itself is written on the map (reddish pixels in its top rows).
        top = [after[yy][xx] for yy in range(int(rect[1]) + 4, int(rect[1]) + 22)
               for xx in range(int(rect[0]) + 4, int(rect[0] + rect[2]) - 4)]
        self.assertTrue(any(r > 200 and g < 170 and b < 160 for r, g, b in top), "no error text on the map")
        # Back to a working input: the overlay goes and the maps are as bright as before.
        seen = len(guitest.read_state_log(log))
        self.click_until(window, log, state["rects"]["source_text"], lambda s: s["source"] == "text")
        state = guitest.wait_for_new_state(log, seen, lambda s: not s["maps_stale"] and not s["pending"] and s["error"] == "")
        px, py = guitest.cell_pixel(rect, L, S, L - 1, S - 1)
        for _ in range(20):  # the state line can come a frame before the screen shows it
            _, _, again = self.capture(window, "stale_gone.png")
            if again[py][px] == before[py][px]:
                break
            time.sleep(0.25)
        self.assertEqual(again[py][px], before[py][px])


class PanelHeaders(guitest.AppTestCase):
    SCRATCH = "gui-headers-"

    def test_long_mask_string_wraps_beside_the_export_button(self):
        mask = "causal+window:3+prefix:1+segments:" + ",".join(["1"] * 30)
        app, log, window, state = self.start("long_mask", text="one two three four five six", mask=mask)
        header, button = state["rects"]["mask_header"], state["rects"]["export_mask_button"]
        self.screenshot(window, "long_mask.png")
        self.assertFalse(overlaps(header, button), (header, button))
        self.assertGreater(header[3], 20, "a mask string this long should wrap onto more lines")
        self.assertLessEqual(button[0] + button[2], state["window"][0])
        # The button sits at the top right of the header, level with its first line.
        self.assertLess(abs(button[1] - header[1]), 6)
        self.assertGreater(button[0], header[0] + header[2])


class LongContent(guitest.AppTestCase):
    SCRATCH = "gui-long-content-"

    def test_long_error_in_the_status_bar_stops_before_the_hint(self):
        folder = "/nonexistent/" + "a_long_folder_name_" * 12
        app, log, window, state = self.start("long_error", text="one two three four", bundle_path=folder)
        seen = len(guitest.read_state_log(log))
        for _ in range(6):  # a busy frame can miss a click
            self.click(window, state["rects"]["source_bundle"], dx=8)
            try:
                state = guitest.wait_for_new_state(log, seen, lambda s: s["maps_stale"] and not s["pending"], timeout=5)
                break
            except AssertionError:
                pass
        self.assertTrue(state["maps_stale"], state["error"])
        self.assertIn("no such bundle directory", state["error"])
        self.x.xdotool("mousemove", "--window", window, 120, 6)
        state = guitest.wait_for_state(log, lambda s: "status_note" in s["rects"])
        self.screenshot(window, "long_error.png")
        note, hint = state["rects"]["status_note"], state["rects"]["status_hint"]
        self.assertFalse(overlaps(note, hint), (note, hint))
        self.assertLess(note[0] + note[2], hint[0])
        self.assertGreater(note[2], 200, "the error should fill the room left of the hint")
        self.assertLessEqual(hint[0] + hint[2], state["window"][0])

    def test_query_focus_titles_and_grid_colour_bar_never_overlap(self):
        layers, heads, L = 12, 12, 9
        bundle = os.path.join(self.dir, "maps")
        os.makedirs(bundle)
        x = np.random.default_rng(4).normal(size=(layers, 1, heads, L, L))
        p = np.exp(x - x.max(-1, keepdims=True))
        np.save(os.path.join(bundle, "attentions.npy"), (p / p.sum(-1, keepdims=True)).astype(np.float32))
        app, log, window, state = self.start("many_heads", bundle)
        # 144 heads open on the layers x heads overview; its checkbox switches to the tiles.
        self.assertTrue(state["overview"]["shown"])
        state = self.click_until(window, log, state["rects"]["overview_toggle"],
                                 lambda s: not s["overview"]["shown"] and "export_grid_small" in s["rects"])
        # The grid: the colour bar's top tick label (centred on the bar's top edge) stays
        # clear of the Export button above it.
        button, bar = state["rects"]["export_grid_small"], state["rects"]["grid_colorbar"]
        self.assertGreaterEqual(bar[1] - (button[1] + button[3]), 7, (button, bar))
        # Query focus on query 5: 144 charts, each with a title that fits its chart.
        x0, y0, w, h = state["rects"]["focus_query_label_0"]
        last = f"query_chart_{layers - 1}_{heads - 1}"
        for _ in range(6):
            self.click(window, [x0, y0 + 5 * h, w, h])
            try:
                state = guitest.wait_for_state(log, lambda s: s["focus_tab"] == "query_focus" and last in s["rects"],
                                               timeout=8)
                break
            except AssertionError:
                pass
        self.x.xdotool("mousemove", "--window", window, 120, 6)
        self.screenshot(window, "many_heads.png")
        rects = state["rects"]
        for l in range(layers):
            titles = []
            for hh in range(heads):
                chart = rects[f"query_chart_{l}_{hh}"]
                title = rects.get(f"query_title_{l}_{hh}")
                if title is None:
                    continue
                self.assertGreaterEqual(title[0], chart[0] - 1, (l, hh, title, chart))
                self.assertLessEqual(title[0] + title[2], chart[0] + chart[2] + 1, (l, hh, title, chart))
                self.assertLessEqual(title[1] + title[3], chart[1] + 1, (l, hh, title, chart))
                titles.append(title)
            self.assertEqual(len(titles), heads, f"layer {l}: short titles fit these charts")
            for a, b in zip(titles, titles[1:]):
                self.assertFalse(overlaps(a, b), (l, a, b))

    def test_focus_titles_and_grid_labels_fit_a_small_window(self):
        # 16 heads in 4 K/V groups, the mistakes lab with dropout: three maps side by side
        # ("with mistake (dropout)" beside "correct (no mistake)") in a 1280x800 window.
        app, log, window, state = self.start("small_window", "--size", "1280x800", text=" ".join(["word"] * 11),
                                             heads=16, head_dim=8, kv_heads=4, mistake="no-scale", dropout=0.2,
                                             train=True, mask="causal")
        self.screenshot(window, "small_window.png")
        rects = state["rects"]
        self.assertEqual(state["window"], [1280, 800])
        for name in ("focus_scores", "focus_probs", "focus_correct"):
            title, heatmap = rects[name + "_title"], rects[name]
            self.assertGreaterEqual(title[0], heatmap[0] - 1, (name, title, heatmap))
            self.assertLessEqual(title[0] + title[2], heatmap[0] + heatmap[2] + 1, (name, title, heatmap))
        self.assertFalse(overlaps(rects["focus_probs_title"], rects["focus_correct_title"]))
        for h in range(16):
            label, tile = rects[f"grid_label_{h}"], rects[f"grid_tile_{h}"]
            self.assertLessEqual(label[0] + label[2], tile[0] + tile[2] + 1, (h, label, tile))
            if h % 4 != 3:  # the next tile in the row
                self.assertFalse(overlaps(label, rects[f"grid_label_{h + 1}"]), h)


if __name__ == "__main__":
    unittest.main()
