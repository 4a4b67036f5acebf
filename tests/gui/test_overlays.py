"""Overlays and busy feedback, driven with xdotool under Xvfb: F1 opens the shortcut help,
Ctrl+O the open-bundle dialog; Escape closes each. A slow
recompute (synthetic L = S = 4096) shows the spinner while the UI keeps answering keys.
A teaching mistake shows its description and the buggy PyTorch line in orange."""
import os
import time
import unittest

import guitest as g


class OverlayTest(g.AppTestCase):
    SCRATCH = "overlays-"

    def test_f1_help_and_ctrl_o_dialog_open_and_close_with_escape(self):
        _, log, window, _ = self.start("overlays", heads=2, head_dim=8)
        state = g.read_state_log(log)[-1]
        self.assertFalse(state["help_open"])
        self.assertFalse(state["modal_open"])

        self.press(window, "F1")
        # Auto-sized window: its first frame is tiny; wait for the settled rectangle (slow machines).
        state = g.wait_for_state(log, lambda s: s["help_open"] and s["rects"].get("help_overlay", [0] * 4)[2] > 300)
        rect = state["rects"]["help_overlay"]
        self.assertGreater(rect[2], 300)
        self.assertGreater(rect[3], 200)
        _, _, rows = self.capture(window, "help.png")
        pixels = g.inner_pixels(rows, rect)
        # Shortcut names are drawn in yellow (1.0, 0.8, 0.3) over the dark overlay.
        yellow = sum(1 for p in pixels if p[0] > 200 and 150 < p[1] < 230 and p[2] < 110)
        self.assertGreater(yellow, 300, "no shortcut text in the help overlay")
        self.press(window, "Escape")
        state = g.wait_for_state(log, lambda s: not s["help_open"])
        self.assertNotIn("help_overlay", state["rects"])

        self.press(window, "ctrl+o")
        state = g.wait_for_state(log, lambda s: s["modal_open"] and s["rects"].get("bundle_modal", [0] * 4)[3] > 60)
        time.sleep(0.3)  # the frame with that rectangle on screen
        rect = state["rects"]["bundle_modal"]
        _, _, rows = self.capture(window, "modal.png")
        pixels = g.inner_pixels(rows, rect)
        text = sum(1 for p in pixels if min(p) > 180)
        self.assertGreater(text, 200, "no text in the open-bundle dialog")
        # The bundle path box has keyboard focus; Escape still closes the dialog.
        self.press(window, "Escape")
        state = g.wait_for_state(log, lambda s: not s["modal_open"])
        self.assertNotIn("bundle_modal", state["rects"])
        self.assertEqual(state["source"], "text")  # cancelled: nothing changed


    def test_slow_recompute_shows_spinner_and_ui_keeps_answering(self):
        _, log, window, _ = self.start("slow", ready=lambda s: "heads_slider" in s["rects"], source="synthetic",
                                       synthetic_L=4096, synthetic_S=4096)
        # The first job (L = S = 4096, about 2 s here) is still running after 100 ms: spinner.
        state = g.wait_for_state(log, lambda s: s["busy"] and s["pending"] and "spinner" in s["rects"], timeout=10)
        self.assertEqual(state["generation"], 0)
        shot = self.screenshot(window, "spinner.png")  # decoded later: F1 goes in while the job runs
        # The UI is not blocked by the computation: F1 opens the help while it runs.
        self.press(window, "F1")
        state = g.wait_for_state(log, lambda s: s["help_open"], timeout=10)
        self.assertTrue(state["pending"] and state["busy"], "F1 was answered only after the computation")
        _, _, rows = g.read_png(shot)
        x, y, w, h = [int(v) for v in state["rects"]["spinner"]]
        arc = [rows[yy][xx] for yy in range(y, y + h) for xx in range(x, x + w)]
        self.assertTrue(any(p != g.BACKGROUND and max(p) > 60 for p in arc), "spinner not drawn")
        # When the result arrives the spinner goes away.
        state = g.wait_for_state(log, lambda s: not s["pending"] and s["generation"] > 0, timeout=120)
        self.assertFalse(state["busy"])
        self.assertNotIn("spinner", state["rects"])
        self.assertEqual((state["L"], state["S"]), (4096, 4096))

    def test_mistake_is_shown_in_orange_in_controls_and_pipeline(self):
        app, log, window, _ = self.start("mistake", heads=2, head_dim=8, mistake="no-scale")
        state = g.read_state_log(log)[-1]
        self.assertEqual(state["mistake"], "no-scale")
        _, _, rows = self.capture(window, "mistake.png")

        def orange(rect, height):
            x, y, w, _ = [int(v) for v in rect]
            return sum(1 for yy in range(y, y + height) for xx in range(x, x + w)
                       if rows[yy][xx][0] > 200 and 120 < rows[yy][xx][1] < 190 and rows[yy][xx][2] < 90)

        # Control panel: description and fix under the combo; pipeline: the buggy line.
        self.assertGreater(orange(state["rects"]["mistake_combo"], 80), 200)
        self.assertGreater(orange(state["rects"]["folded_toggle"], 200), 200)

        # Without a mistake, neither place has orange text.
        self.stop(app)  # one window named attnscope at a time
        _, log, window, _ = self.start("no_mistake", heads=2, head_dim=8)
        state = g.read_state_log(log)[-1]
        self.assertEqual(state["mistake"], "none")
        _, _, rows = self.capture(window, "no_mistake.png")
        self.assertEqual(orange(state["rects"]["folded_toggle"], 200), 0)


if __name__ == "__main__":
    unittest.main()
