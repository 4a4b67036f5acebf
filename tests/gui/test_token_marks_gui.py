"""Issue 22 item 9: space and newline tokens are drawn as visible marks, "␣" and "↵", in the
axis labels and tooltips (the font atlas has both glyphs); the state log's token labels
keep their text."""
import unittest

import guitest as g

TEXT = "a b\nc d\n"  # python-code reads characters: a, space, b, newline, ...


class TokenMarksTest(g.AppTestCase):
    SCRATCH = "token-marks-"

    def label_pixels(self, rows, rect, row, count):
        """Bright pixels of the row label left of a map (rect) at query row `row` of `count`."""
        x, y, w, h = rect
        top, bottom = int(y + row * h / count) + 1, int(y + (row + 1) * h / count) - 1
        return sum(sum(rows[yy][xx]) > 400 for yy in range(top, bottom) for xx in range(int(x) - 16, int(x) - 3))

    def test_space_and_newline_marks(self):
        _, log, window, state = self.start("marks", source="model", model="python-code", model_text=TEXT)
        self.assertTrue(state["font_glyphs"]["\u2423"] and state["font_glyphs"]["\u21b5"], state["font_glyphs"])
        self.assertEqual(state["query_tokens"][:4], ["a", " ", "b", "\\n"])  # the labels themselves are kept
        L = state["L"]
        self.assertEqual(L, len(TEXT))
        # The row labels of the space (1) and newline (3) rows are drawn, as visibly as a letter's.
        rows = self.capture(window, "marks.png")[2]
        rect = state["rects"]["focus_scores"]
        letter = self.label_pixels(rows, rect, 0, L)
        self.assertGreater(letter, 3)
        for row in (1, 3):
            self.assertGreater(self.label_pixels(rows, rect, row, L), 3, "row %d has no visible label" % row)
        # The tooltip names the tokens by their marks.
        x, y, w, h = state["rects"]["focus_probs"]
        seen = len(g.read_state_log(log))
        self.x.xdotool("mousemove", "--window", window, int(x + 0.5 * w / L), int(y + 3.5 * h / L))
        state = g.wait_for_new_state(log, seen, lambda s: s["hover"] == [3, 0])
        self.assertEqual(state["hover_tokens"], ["\u21b5", "a"])
        self.x.xdotool("mousemove", "--window", window, int(x + 0.5 * w / L), int(y + 1.5 * h / L))
        state = g.wait_for_new_state(log, seen, lambda s: s["hover"] == [1, 0])
        self.assertEqual(state["hover_tokens"], ["\u2423", "a"])
        self.screenshot(window, "tooltip.png")


if __name__ == "__main__":
    unittest.main()
