"""Partial redraw (app/gui/redraw.h): on llvmpipe the app draws only what changed since the
last frame and copies it to the window. After a run of hovers, clicks and a view-only toggle,
each drawn as a partial frame, the window must equal, pixel for pixel, the same steps drawn
whole every frame (--full-redraw). The status bar is left out: it shows the recompute's time."""
import time
import unittest

import guitest as g

SETTINGS = dict(source="synthetic", synthetic_L=48, synthetic_S=48, heads=4, head_dim=8, mask="causal")
STATUS_BAR = 32  # px at the bottom of the window


class PartialRedrawTest(g.AppTestCase):
    SCRATCH = "partial-redraw-"

    def steps(self, name, *flags):
        """Starts the app and takes a window capture after each of three steps: another colour
        map (a popup, then a new colour table on every map); the pointer over map cells
        (crosshair, tooltip); the pointer over head 1's tile and a metrics row, then a click on
        head 3's tile. Each step ends with an arrow key moving the focused head, a change drawn
        as a partial frame only (no popup, tooltip or new texture), so a capture shows the kept
        pixels. Returns (the captures, the last state)."""
        app, log, window, state = self.start(name, "--size", "1280x800", *flags, **SETTINGS)
        rects = state["rects"]
        shots = []

        def focus_by_key(key, head):
            self.x.xdotool("mousemove", "--window", window, 120, 6)
            time.sleep(0.3)
            self.press(window, key)
            g.wait_for_state(log, lambda s: s["focused_head"] == head and s["hover"] == [-1, -1])
            time.sleep(0.6)  # a few frames after the change
            shots.append(self.capture(window, "%s-%d.png" % (name, len(shots))))

        self.choose_item(window, log, "colormap_combo", "colormap_item_magma", lambda s: s["colormap"] == "magma")
        focus_by_key("Right", 1)
        x, y, w, h = rects["focus_probs"]
        for fx, fy in ((0.8, 0.3), (0.2, 0.7), (0.5, 0.6)):
            self.x.xdotool("mousemove", "--window", window, int(x + fx * w), int(y + fy * h))
            time.sleep(0.3)
        focus_by_key("Right", 2)
        for key in ("grid_tile_1", "metrics_row_3"):
            tx, ty, tw, th = rects[key]
            self.x.xdotool("mousemove", "--window", window, int(tx + tw / 2), int(ty + th / 2))
            time.sleep(0.3)
        self.click_until(window, log, rects["grid_tile_3"], lambda s: s["focused_head"] == 3)
        focus_by_key("Left", 2)
        state = g.read_state_log(log)[-1]
        self.stop(app)
        return shots, state

    def test_partial_frames_equal_whole_frames(self):
        partial, partial_state = self.steps("partial")
        whole, whole_state = self.steps("whole", "--full-redraw")
        self.assertGreater(partial_state["partial_redraws"], 10)  # the steps were drawn partially
        self.assertEqual(whole_state["partial_redraws"], 0)
        for step, ((width, height, rows), (whole_width, whole_height, whole_rows)) in enumerate(zip(partial, whole)):
            self.assertEqual((width, height), (whole_width, whole_height))
            differing = [(x, y) for y in range(height - STATUS_BAR) for x in range(width) if rows[y][x] != whole_rows[y][x]]
            self.assertEqual(differing[:10], [], "step %d: %d pixels differ" % (step, len(differing)))


if __name__ == "__main__":
    unittest.main()
