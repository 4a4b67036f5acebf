"""Issue 22 item 13: nothing is cut off at 1440x900 or 1280x800.

At both window sizes, through the state log: every recorded widget rectangle (text items,
table headers' labels and colour-bar labels too) lies inside the area where it can be seen
whole, its panel's visible part ("clips": the window or table cell it was drawn in, over the
window's scroll range when it scrolls); pop-up windows (F1 help) lie inside the app's window;
no label is cut short to "..", and the map titles of a row do not run into each other.
Journeys: a trained model's first view, the F1 help, Compare A / B, Query focus, the mistakes
lab's three maps with a long mask, the sandbox with every variant open, the KV-cache stepper (F5)
and the layers x heads overview of a 12 x 12 bundle.
An error does not push the control just changed: it shows under that control's section."""
import os
import time
import unittest

import guitest as g

SIZES = ("1440x900", "1280x800")
CHAR_W = 7  # the UI font's advance (monospaced, 13 px): a hint of n characters is n x 7 pixels wide
WINDOWS = ("help_overlay", "notice", "toast", "bundle_modal")
# Map titles drawn side by side in one row, left to right.
TITLE_ROWS = (("focus_scores_title", "focus_probs_title", "focus_correct_title"),
              ("compare_a_title", "compare_b_title", "compare_diff_title"))


def cut_off(state):
    """What is cut off in this state line, one line each (empty when everything fits)."""
    rects, problems = state["rects"], []
    for name, (cx, cy, cw, ch) in state["clips"].items():
        if name.startswith("metrics_row_"):
            continue  # a table row spans every column; its cells' text is clipped to each column
        x, y, w, h = rects[name]
        if w <= 0 or h <= 0:
            continue
        if x < cx - 1 or y < cy - 1 or x + w > cx + cw + 1 or y + h > cy + ch + 1:
            problems.append("%s %s reaches out of %s" % (name, [x, y, w, h], [cx, cy, cw, ch]))
    width, height = state["window"]
    for name in WINDOWS:
        if name in rects:
            x, y, w, h = rects[name]
            if x < 0 or y < 0 or x + w > width or y + h > height:
                problems.append("window %s %s reaches out of the app's %dx%d" % (name, rects[name], width, height))
    for name, text in state["texts"].items():
        if text.endswith(".."):
            problems.append("%s cut to %r" % (name, text))
    for row in TITLE_ROWS:
        shown = [rects[name] for name in row if name in rects]
        for left, right in zip(shown, shown[1:]):
            if left[0] + left[2] > right[0]:
                problems.append("titles %s and %s overlap" % (left, right))
    return problems


class LayoutFitsTest(g.AppTestCase):
    SCRATCH = "layout-fits-"
    maxDiff = None

    def start(self, *args, **kwargs):
        """One app at a time (a failed size's too): the next one's window is found by its title."""
        if getattr(self, "app", None):
            self.stop(self.app)
        self.app, log, window, state = super().start(*args, **kwargs)
        return self.app, log, window, state

    def assertFits(self, state, window, what):
        problems = cut_off(state)
        if problems:
            self.screenshot(window, what.replace(" ", "_") + ".png")
        self.assertEqual(problems, [], "%s at %s: %d cut off" % (what, state["window"], len(problems)))

    def assertHintsShown(self, state, window, size):
        """Issue 35: the hints under the maps, in the head table's filter box and under the
        predictions are whole inside their panels as first shown (not below a scroll), and the
        filter's hint is one of its examples whole, no wider than the box."""
        self.screenshot(window, "hints_%s.png" % size)
        panels = state["panels"]
        for name, panel in (("focus_zoom_line", "focus"), ("metrics_filter", "metrics"),
                            ("predictions_actual", "predictions"), ("predictions_hint", "predictions")):
            x, y, w, h = state["rects"][name]
            px, py, pw, ph = panels[panel]
            self.assertTrue(px <= x and py <= y and x + w <= px + pw + 1 and y + h <= py + ph + 1,
                            "%s %s is not whole inside the %s panel %s at %s" % (name, [x, y, w, h], panel, panels[panel], size))
        hint = state["texts"]["metrics_filter_hint"]
        self.assertIn(hint, ("filter: L3  H5  induc  entropy>2  sink<0.1", "filter: L3  induc  entropy>2",
                             "filter: induc  entropy>2"))
        self.assertLessEqual(len(hint) * CHAR_W, state["rects"]["metrics_filter"][2])

    def settled_again(self, log, count, predicate, timeout=20):
        """The state once the frame after an action is drawn (rects settle a frame late)."""
        g.wait_after(log, count, predicate, timeout=timeout)
        time.sleep(0.4)
        return g.read_state_log(log)[-1]

    def press_until(self, window, log, keys, predicate, tries=4):
        """Presses keys until a later state matches (a busy frame can miss a key press)."""
        for _ in range(tries):
            count = g.line_count(log)
            self.press(window, keys)
            try:
                return self.settled_again(log, count, predicate, timeout=5)
            except AssertionError:
                pass
        return self.settled_again(log, 0, predicate, timeout=1)

    def test_trained_model_help_and_compare(self):
        for size in SIZES:
            with self.subTest(size=size):
                _, log, window, state = self.start("model_" + size, "--size", size, ready=g.model_settled,
                                                   source="model", model="python-code")
                state = self.settled_again(log, 0, lambda s: g.model_settled(s) and "predictions_actual" in s["rects"])
                self.assertEqual(state["window"], [int(v) for v in size.split("x")])
                self.assertFits(state, window, "model " + size)
                self.assertHintsShown(state, window, size)

                state = self.press_until(window, log, "F1", lambda s: "help_overlay" in s["rects"])
                self.assertIn("help_row_ctrl_s", state["rects"])
                self.assertFits(state, window, "help " + size)
                self.press_until(window, log, "F1", lambda s: "help_overlay" not in s["rects"])

                count = g.line_count(log)
                self.click(window, state["rects"]["focus_tab_compare"])
                state = self.settled_again(log, count, lambda s: "compare_diff" in s["rects"] and
                                           "help_overlay" not in s["rects"])
                self.assertFits(state, window, "compare " + size)

                count = g.line_count(log)
                self.click(window, state["rects"]["focus_tab_query_focus"])
                state = self.settled_again(log, count, lambda s: "query_token_3" in s["rects"])
                count = g.line_count(log)
                self.click(window, state["rects"]["query_token_3"])
                state = self.settled_again(log, count, lambda s: "query_title_1_3" in s["rects"])
                self.assertFits(state, window, "query focus " + size)

    def test_mistakes_lab_with_a_long_mask(self):
        for size in SIZES:
            with self.subTest(size=size):
                _, log, window, state = self.start(
                    "mistake_" + size, "--size", size, text="one two three four five six seven eight", heads=2,
                    head_dim=8, mistake="no-scale", mask="causal+window:3+prefix:1+segments:" + ",".join(["1"] * 8))
                state = self.settled_again(log, 0, lambda s: g.settled(s) and "focus_correct_title" in s["rects"])
                self.assertFits(state, window, "mistake " + size)

    def test_sandbox_with_every_variant(self):
        for size in SIZES:
            with self.subTest(size=size):
                _, log, window, state = self.start("variants_" + size, "--size", size, text="one two three four",
                                                   heads=4, head_dim=8, kv_heads=2, rope=True, alibi=True, softcap=5.0,
                                                   mask="causal")
                state = self.settled_again(log, 0, lambda s: g.settled(s) and "rope_decay_plot" in s["rects"])
                self.assertFits(state, window, "variants " + size)

                state = self.press_until(window, log, "F5", lambda s: s.get("stepper") and "stepper_step" in s["texts"])
                self.assertFits(state, window, "stepper " + size)

    def test_overview_of_144_heads(self):
        bundle = os.path.join(self.dir, "heads144")
        os.makedirs(bundle)
        g.save_softmax_maps(bundle, (12, 1, 12, 9, 9), seed=5)
        for size in SIZES:
            with self.subTest(size=size):
                _, log, window, state = self.start("overview_" + size, bundle, "--size", size)
                state = self.settled_again(log, 0, lambda s: g.settled(s) and "overview_range" in s["rects"]
                                           and s["overview"]["cells"])
                self.assertFits(state, window, "overview " + size)

    def test_error_shows_under_the_changed_control(self):
        for size in SIZES:
            with self.subTest(size=size):
                _, log, window, state = self.start("error_" + size, "--size", size, text="one two three four")
                before = state["rects"]["source_bundle"]
                # "bundle" with no folder chosen: the run fails with an error.
                self.click_until(window, log, before, lambda s: s["source"] == "bundle")
                state = self.settled_again(log, 0, lambda s: "control_error" in s["rects"] and not s["pending"])
                self.assertIn("no bundle directory chosen", state["error"])
                self.assertEqual(state["rects"]["source_bundle"], before)  # not pushed down
                error = state["rects"]["control_error"]
                self.assertGreater(error[1], before[1] + before[3])
                self.assertFits(state, window, "error " + size)


if __name__ == "__main__":
    unittest.main()
