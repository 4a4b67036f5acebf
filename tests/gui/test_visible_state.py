"""Visible state (issue 12): a failed recompute marks the maps on screen as out of date (a
dimmed overlay with the error written on the maps themselves, and in the status bar), and a
long mask string wraps beside the mask panel's Export button instead of running under it."""
import time
import unittest

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


if __name__ == "__main__":
    unittest.main()
