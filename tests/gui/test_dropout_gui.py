"""Issue 22 item 10: dropout only runs in train mode, so with train mode off the dropout
slider is greyed out (a click does not move it) and a note beside train mode says why;
ticking train mode makes it work."""
import time
import unittest

import guitest as g


class DropoutSliderTest(g.AppTestCase):
    SCRATCH = "dropout-gui-"

    def test_slider_greyed_out_in_eval_mode(self):
        _, log, window, state = self.start("dropout", text="one two three four", heads=2, head_dim=8, dropout=0.3)
        self.assertFalse(state["train"])
        self.assertIn("dropout_reason", state["rects"])
        slider = state["rects"]["dropout_slider"]
        # Drawn dimmer than the heads slider (same widget, enabled).
        rows = self.capture(window, "eval.png")[2]
        def brightest(rect):
            return max(sum(p) for p in g.inner_pixels(rows, rect, inset=3))
        self.assertLess(brightest(slider), 0.8 * brightest(state["rects"]["heads_slider"]))
        # A click near its right end changes nothing.
        self.click(window, slider, dx=0.6 * slider[2])  # the frame, left of the label
        self.x.xdotool("mousemove", "--window", window, 120, 6)
        time.sleep(1.0)
        self.assertTrue(all(abs(s["dropout"] - 0.3) < 1e-6 for s in g.read_state_log(log)), "the slider moved")

        # Train mode on: the note goes and the slider moves.
        state = self.click_until(window, log, state["rects"]["train_mode"], lambda s: s["train"], dx=8)
        state = g.wait_for_state(log, lambda s: s["train"] and "dropout_reason" not in s["rects"])
        state = self.click_until(window, log, slider, lambda s: s["dropout"] > 0.6, dx=0.6 * slider[2])
        self.assertTrue(state["train"])


if __name__ == "__main__":
    unittest.main()
