"""Head analytics and mask counts of a tiled run (issue 9), on the real app under Xvfb.
ATTNSCOPE_FULL_PATH_BYTES=1 sends the run down the tiled path (docs/app.md, "Long maps"): a
300 x 300 bundle with 4 heads, causal, an attn_mask.npy with fully masked rows, and tokens
holding a repeated segment. Checked:
- the head metrics table is shown for the tiled run, and its numbers (state log head_table
  values, what the table draws) equal `attnscope analyze --json` of the same bundle (the full
  path) within 1e-6, relative above 1, induction included; its groups equal analyze's clusters;
- sorting by a metric orders the table as analyze's numbers do, and "order grid by table"
  moves the grid's tiles to the table's order;
- the mask panel's counts are the real map's allowed cells and fully masked rows (NumPy), not
  the overview's blocks."""
import json
import os
import subprocess
import sys
import unittest

import numpy as np

import guitest as g

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import reference as ref  # noqa: E402

N = 300  # more than the overview's 256 rows: the overview pools
H = 4
METRICS = ["entropy_bits", "max_prob", "mean_distance", "sink_mass", "diag_mass", "prev_mass", "effective_keys",
           "induction"]


def write_bundle(folder):
    """Returns the combined mask [N, N] (causal AND attn_mask)."""
    rng = np.random.default_rng(5)
    attn_mask = rng.random((N, N)) < 0.7
    attn_mask[40:46] = False  # fully masked rows
    words = ["t%d" % w for w in rng.integers(0, 10 ** 6, N)]
    words[200:260] = words[20:80]  # a repeated segment: induction
    arrays = ref.make_case(21, B=1, L=N, D=16)
    arrays["attn_mask"] = attn_mask
    ref.write_bundle(folder, arrays, meta=dict(heads=H, mask="causal"), texts={"tokens.txt": "\n".join(words) + "\n"})
    return np.tril(np.ones((N, N), bool)) & attn_mask


def expect_close(test, got, want, where):
    if want is None:
        test.assertIsNone(got, where)
    else:
        test.assertAlmostEqual(got, want, delta=1e-6 * max(1.0, abs(want)), msg=where)


class TiledMetricsGuiTest(g.TiledAppTestCase):
    SCRATCH = "tiled-metrics-"

    def test_head_table_and_mask_counts_of_a_tiled_run(self):
        bundle = os.path.join(self.dir, "bundle")
        mask = write_bundle(bundle)
        result = subprocess.run([g.BIN, "analyze", bundle, "--json"], capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        analyzed = {row["head"]: row for row in json.loads(result.stdout)}
        self.assertEqual(sorted(analyzed), list(range(H)))
        self.assertTrue(all(analyzed[h]["induction"] is not None for h in range(H)))

        _, log, window, state = self.start("table", bundle, ready=lambda s: g.settled(s) and s.get("tiled") is not None
                                           and s["head_table"] is not None)
        self.assertEqual(state["error"], "")
        self.assertEqual((state["tiled"]["L"], state["tiled"]["S"]), (N, N))
        table = state["head_table"]
        self.assertEqual(table["order"], [[0, h] for h in range(H)])
        for (layer, head), values, group in zip(table["order"], table["values"], table["groups"]):
            want = analyzed[head]
            for name in METRICS:
                expect_close(self, values[name], want[name], "head %d %s" % (head, name))
            self.assertEqual(group, want["cluster"], "head %d" % head)

        # The mask panel: the real map's cells and rows.
        self.assertEqual(state["allowed_cells"], int(mask.sum()))
        self.assertEqual(state["fully_masked_rows"], int((~mask.any(1)).sum()))
        self.assertGreaterEqual(state["fully_masked_rows"], 6)  # rows 40-45 at least
        for name in ["metrics_row_0", "metrics_header_max_prob", "mask_header"]:
            self.assertIn(name, state["rects"])
        self.screenshot(window, "tiled_0_table_and_mask.png")

        # Order the grid by the table, then sort by max_prob: largest first, as analyze's numbers say.
        state = self.click_until(window, log, state["rects"]["metrics_order_grid"],
                                 lambda s: s["head_table"] and s["head_table"]["order_grid"])
        before = state["rects"]
        state = self.click_until(window, log, before["metrics_header_max_prob"],
                                 lambda s: s["head_table"]["sort_column"] == "max_prob" and s["head_table"]["descending"])
        expected = sorted(range(H), key=lambda h: -analyzed[h]["max_prob"])
        self.assertNotEqual(expected, list(range(H)))
        self.assertEqual(state["head_table"]["order"], [[0, h] for h in expected])
        for slot, head in enumerate(expected):  # head `head` now sits in slot `slot`
            self.assertEqual(state["rects"]["grid_tile_%d" % head], before["grid_tile_%d" % slot], (slot, head))
        self.screenshot(window, "tiled_1_sorted_by_max_prob.png")


if __name__ == "__main__":
    unittest.main()
