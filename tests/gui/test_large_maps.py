"""Maps larger than the screen keep their peaks: a 2048 x 2048 bundle whose probabilities
have one isolated 1.0 (and whose scores have one isolated large negative value) shows both
on screen although the heatmap has far fewer pixels than cells; hovering the peak still
reports the exact logical cell of the trace, not a texture cell."""
import os
import unittest

import numpy as np

import guitest as g

N = 2048                      # L = S
SPIKE = (1500, 1700)          # probability 1.0 and score +big: past 1024 on both axes
NEGATIVE = (300, 1234)        # score -big (probability ~0)
VIRIDIS_TOP = (253, 231, 37)  # kViridisTable[255]
DIVERGING_TOP = (103, 0, 31)  # kDivergingTable[255]
DIVERGING_BOTTOM = (5, 48, 97)


def close(pixel, color, tolerance=2):
    return all(abs(a - b) <= tolerance for a, b in zip(pixel, color))


def write_spike_bundle(folder):
    """query/key [1, N, 8] zero except one row each, identity weights, no biases: every score
    is 0 except q[i] . k[j] / sqrt(8) = +-3535 at the two cells, so row SPIKE[0] puts all its
    probability on SPIKE[1] and every other row is uniform (1/N)."""
    os.makedirs(folder, exist_ok=True)
    query = np.zeros((1, N, 8), np.float32)
    key = np.zeros((1, N, 8), np.float32)
    query[0, SPIKE[0], 0], key[0, SPIKE[1], 0] = 100.0, 100.0
    query[0, NEGATIVE[0], 1], key[0, NEGATIVE[1], 1] = 100.0, -100.0
    np.save(os.path.join(folder, "query.npy"), query)
    np.save(os.path.join(folder, "key.npy"), key)
    np.save(os.path.join(folder, "value.npy"), np.ones((1, N, 8), np.float32))
    for name in ("w_q", "w_k", "w_v", "w_o"):
        np.save(os.path.join(folder, name + ".npy"), np.eye(8, dtype=np.float32))


def pixels_near(rows, rect, i, j, color, radius=3):
    """(x, y) of pixels within radius of cell (i, j)'s centre in rect that match color."""
    cx, cy = g.cell_pixel(rect, N, N, i, j)
    return [(x, y) for y in range(cy - radius, cy + radius + 1) for x in range(cx - radius, cx + radius + 1)
            if close(rows[y][x], color)]


class LargeMapTest(g.AppTestCase):
    SCRATCH = "large-"

    def test_isolated_peaks_survive_downsampling(self):
        bundle = os.path.join(self.dir, "spike")
        write_spike_bundle(bundle)
        _, log, window, state = self.start(
            "spike", source="bundle", bundle_path=bundle, heads=1, mask="none", prob_colormap="viridis",
            log_scale=False, ready=lambda s: g.settled(s) and s.get("L") == N)
        self.assertEqual(state["error"], "")
        self.assertEqual((state["L"], state["S"], state["heads"]), (N, N, 1))
        probs_rect, scores_rect = state["rects"]["focus_probs"], state["rects"]["focus_scores"]
        self.assertLess(probs_rect[2], N / 2, "the map must have fewer pixels than cells for this test")
        _, _, rows = self.capture(window, "spike.png")

        peak = pixels_near(rows, probs_rect, *SPIKE, VIRIDIS_TOP)
        self.assertTrue(peak, "the probability spike at %s is not drawn" % (SPIKE,))
        # Only the spike is at the top colour: every other probability is <= 1/N.
        top = sum(close(p, VIRIDIS_TOP) for p in g.inner_pixels(rows, probs_rect))
        self.assertLessEqual(top, 16)
        # Scores pool by largest |v| with its sign: both extremes of the diverging map show.
        self.assertTrue(pixels_near(rows, scores_rect, *SPIKE, DIVERGING_TOP), "positive score spike hidden")
        self.assertTrue(pixels_near(rows, scores_rect, *NEGATIVE, DIVERGING_BOTTOM), "negative score spike hidden")

        # Hovering the drawn peak reports a cell of the trace's [N, N] grid next to the spike,
        # past the 256-texel pooled texture (the tooltip reads that exact cell's numbers).
        x, y = peak[len(peak) // 2]
        self.x.xdotool("mousemove", "--window", window, x, y)
        cells_per_px = N / probs_rect[2] + 1
        state = g.wait_for_state(log, lambda s: s["hover"][0] >= 1024 and s["hover"][1] >= 1024)
        self.assertLessEqual(abs(state["hover"][0] - SPIKE[0]), 2 * cells_per_px, state["hover"])
        self.assertLessEqual(abs(state["hover"][1] - SPIKE[1]), 2 * cells_per_px, state["hover"])


if __name__ == "__main__":
    unittest.main()
