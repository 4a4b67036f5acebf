"""The mistakes lab's comparison: with a teaching mistake the focus view shows the correct
run's probabilities ("correct (no mistake)") beside the buggy ones, on one colour scale,
with max |buggy - correct| underneath. Checked by the state log and by real pixels."""
import unittest

import guitest as g


def cell_colours(rows, rect, L, S):
    """Colour at the centre of every cell (i, j) of the heatmap drawn in rect."""
    return {(i, j): rows[y][x] for i in range(L) for j in range(S)
            for x, y in [g.cell_pixel(rect, L, S, i, j)]}


class MistakeCompareTest(g.AppTestCase):
    SCRATCH = "mistake-compare-"

    def test_floor_division_differs_from_correct_map_with_same_causal_hatch(self):
        _, log, window, state = self.start("floor", heads=2, head_dim=8, mistake="floor-div-scale", mask="causal")
        self.assertTrue(state["correct_trace"])
        self.assertEqual(state["error"], "")
        rects = state["rects"]
        for name in ("focus_scores", "focus_probs", "focus_correct", "focus_diff_summary"):
            self.assertIn(name, rects)
        buggy, correct = rects["focus_probs"], rects["focus_correct"]
        self.assertEqual(buggy[2:], correct[2:], "both probability maps have one size")
        self.assertEqual(buggy[1], correct[1], "side by side, same rows")
        self.assertGreater(correct[0], buggy[0] + buggy[2], "correct map right of the buggy one")
        self.assertGreater(correct[2], 60)
        self.assertGreater(state["diff_max"], 1e-3)
        self.assertLessEqual(state["diff_max"], 1.0)
        self.assertTrue(state["diff_summary"].startswith("max |\u0394p| = "), state["diff_summary"])

        L, S = state["L"], state["S"]
        _, _, rows = self.capture(window, "floor.png")
        buggy_px, correct_px = cell_colours(rows, buggy, L, S), cell_colours(rows, correct, L, S)
        differing = 0
        for (i, j), colour in buggy_px.items():
            if j > i:  # causal: hatched in both maps
                self.assertIn(colour, g.MASKED, (i, j))
                self.assertIn(correct_px[i, j], g.MASKED, (i, j))
            else:
                self.assertNotIn(colour, g.MASKED, (i, j))
                self.assertNotIn(correct_px[i, j], g.MASKED, (i, j))
                differing += colour != correct_px[i, j]
        self.assertGreater(differing, 0, "floor division left every probability unchanged on screen")
        # Row 0 attends to key 0 only (probability 1 in both runs): same top colour.
        self.assertEqual(buggy_px[0, 0], correct_px[0, 0])

    def test_no_contiguous_keeps_maps_identical_and_summary_says_zero(self):
        _, log, window, state = self.start("nocontig", heads=2, head_dim=8, mistake="no-contiguous")
        self.assertEqual(state["diff_max"], 0)
        self.assertTrue(state["diff_summary"].startswith("max |\u0394p| = 0 over head 0"), state["diff_summary"])
        L, S = state["L"], state["S"]
        _, _, rows = self.capture(window, "nocontig.png")
        buggy = cell_colours(rows, state["rects"]["focus_probs"], L, S)
        correct = cell_colours(rows, state["rects"]["focus_correct"], L, S)
        self.assertEqual(buggy, correct)
        self.assertGreater(len(set(buggy.values())), 3, "the maps are not blank")

    def test_without_mistake_no_comparison(self):
        _, log, _, state = self.start("none", heads=2, head_dim=8)
        self.assertFalse(state["correct_trace"])
        self.assertIsNone(state["diff_max"])
        self.assertEqual(state["diff_summary"], "")
        self.assertNotIn("focus_correct", state["rects"])

    def test_crashing_mistake_shows_error_and_still_draws_correct_map(self):
        ready = lambda s: s["generation"] > 0 and not s["pending"] and "focus_correct" in s["rects"]
        _, log, window, state = self.start("kvreshape", ready=ready, heads=2, head_dim=8,
                                           mistake="kv-reshape-with-L", cross_attention=True)
        self.assertTrue(state["error"].startswith("RuntimeError: shape '"), state["error"])
        self.assertTrue(state["correct_trace"])
        self.assertIsNone(state["diff_max"])
        self.assertIn("crashes", state["diff_summary"])
        rects = state["rects"]
        self.assertIn("focus_crash", rects)
        self.assertNotIn("focus_probs", rects)  # no buggy map: the buggy run has no result
        self.assertLess(rects["focus_crash"][0], rects["focus_correct"][0])
        _, _, rows = self.capture(window, "kvreshape.png")
        pixels = g.inner_pixels(rows, rects["focus_correct"])
        colourful = {p for p in pixels if p != g.BACKGROUND and p not in g.MASKED}
        self.assertGreater(len(colourful), 5, "the correct map is not drawn")
        # The crash message is drawn in red where the buggy maps would be.
        red = sum(1 for p in g.inner_pixels(rows, rects["focus_crash"], inset=0)
                  if p[0] > 200 and p[1] < 120 and p[2] < 120)
        self.assertGreater(red, 100)


if __name__ == "__main__":
    unittest.main()
