"""The compare view's "same head under two settings" (issue 10), on the real app under Xvfb:
B = the focused head of this run's settings with a mistake from the mistakes lab ("with
no-scale": scores not divided by sqrt(d)), computed as a second run off the UI thread. A - B is
checked against two `attnscope export --settings ... --format npy` runs of the same settings
without and with the mistake (max |A - B| and every listed cell within 1e-6), the difference
export's .npy equals their difference, and choosing "this run" again stops using the variant."""
import json
import os
import re
import subprocess
import unittest

import numpy as np

import guitest as g

SETTINGS = dict(heads=2, head_dim=8, mask="causal")


def mistake_names():
    """The mistakes in the app's order, from the CLI's error message (an independent listing)."""
    result = subprocess.run([g.BIN, "compute", "--demo", "--mistake", "bogus", "--out", "/nonexistent"],
                            capture_output=True, text=True, timeout=60)
    return re.search(r"one of: ([^)]*)\)", result.stderr).group(1).split(", ")


class CompareVariantGuiTest(g.AppTestCase):
    SCRATCH = "compare-variant-gui-"

    def reference_probs(self, name, **extra):
        """[L, S] probabilities of head 0 from `attnscope export` on these settings."""
        path = g.write_settings(self.dir, name + ".json", **SETTINGS, **extra)
        out = os.path.join(self.dir, name)
        result = subprocess.run([g.BIN, "export", "--settings", path, "--what", "probs", "--heads", "0", "--format", "npy",
                                 "--out", out], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        npy = [p for p in result.stdout.split() if p.endswith(".npy")]
        return np.load(npy[0]).astype(np.float64)

    def test_b_is_the_focused_head_without_scaling(self):
        a = self.reference_probs("ref_this")
        b = self.reference_probs("ref_no_scale", mistake="no-scale")
        diff = a - b
        self.assertGreater(np.abs(diff).max(), 1e-3, "no scaling changes the map")
        folder = os.path.join(self.dir, "exports")
        _, log, window, state = self.start("variant", export_dir=folder, **SETTINGS)
        state = self.click_until(window, log, state["rects"]["focus_tab_compare"],
                                 lambda s: s["focus_tab"] == "compare" and s["compare"] and "compare_b_run" in s["rects"])
        self.assertNotIn("compare_a_run", state["rects"], "A has no other run without a mistake")
        # B's head := 0 (A is the focused head 0), then B's run := with no-scale.
        self.choose_item(window, log, "compare_b_head", "compare_b_head_item_0",
                         lambda s: s["compare"] and s["compare"]["b"]["head"] == 0 and s["compare"]["abs_max"] == 0)
        item = mistake_names().index("no-scale")  # "this run", then every mistake but none
        self.choose_item(window, log, "compare_b_run", "compare_b_run_item_%d" % item,
                         lambda s: s["compare"] and s["compare"]["b"]["run"] == "with:no-scale")
        state = g.wait_for_state(log, lambda s: s["compare"] and s["compare"]["b"]["run"] == "with:no-scale" and
                                 s["compare"]["abs_max"] > 0 and "compare_export" in s["rects"], timeout=30)
        cmp = state["compare"]
        self.assertEqual(cmp["a"], {"layer": 0, "head": 0, "run": "this"})
        self.assertEqual(state["compare_variant"]["mistake"], "no-scale")
        self.assertEqual(cmp["error"], "")
        self.assertAlmostEqual(cmp["abs_max"], np.abs(diff).max(), places=6)
        self.assertGreater(len(cmp["largest"]), 0)
        for i, j, va, vb, d in cmp["largest"]:
            self.assertAlmostEqual(va, a[i, j], places=6)
            self.assertAlmostEqual(vb, b[i, j], places=6)
            self.assertAlmostEqual(d, diff[i, j], places=6)
        self.screenshot(window, "variant.png")
        state = self.click_until(window, log, state["rects"]["compare_export"],
                                 lambda s: s["last_export"] and s["last_export"]["kind"] == "difference" and not s["exporting"])
        paths = state["last_export"]["paths"]
        self.assertEqual(os.path.basename(paths[0]), "difference_L0H0-L0H0+no-scale_b0_L%dxS%d.png" % a.shape)
        np.testing.assert_allclose(np.load(paths[1]), diff, atol=1e-6)
        with open(paths[2]) as f:
            self.assertEqual(json.load(f)["b"], {"layer": 0, "head": 0, "run": "with:no-scale"})
        # Back to this run: A - B of a head with itself is zero again.
        self.choose_item(window, log, "compare_b_run", "compare_b_run_item_0",
                         lambda s: s["compare"] and s["compare"]["b"]["run"] == "this" and s["compare"]["abs_max"] == 0)


if __name__ == "__main__":
    unittest.main()
