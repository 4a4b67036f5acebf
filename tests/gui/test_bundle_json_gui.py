"""Configure once, the app's side: `attnscope BUNDLE` applies bundle.json's heads, mask, scale,
fill and seed exactly as `attnscope compute/export BUNDLE` do (tests/cli/test_bundle_json.py):
the app computes H=2 with the causal mask, and its Ctrl+S figure is byte-identical to the
headless export of the same bundle. Before configureRun, the app ignored bundle.json."""
import json
import os
import subprocess
import sys
import unittest

import numpy as np

import guitest as g

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import reference as ref  # noqa: E402

META = dict(heads=2, mask="causal", scale=0.5, fill="1e9", seed=3)


class BundleJsonGuiTest(g.AppTestCase):
    SCRATCH = "bundle-json-gui-"

    def test_app_reads_bundle_json_like_compute_and_export(self):
        bundle = os.path.join(self.dir, "bundle")
        ref.write_bundle(bundle, ref.make_case(21, B=1, L=6, D=8), meta=META)
        folder = os.path.join(self.dir, "exports")
        _, log, window, state = self.start("bundle_json", bundle, export_dir=folder)
        self.assertEqual(state["error"], "")
        self.assertEqual((state["source"], state["settings_heads"], state["heads"]), ("bundle", 2, 2))
        self.assertEqual((state["mask"], state["components"]), ("causal", ["causal"]))

        self.press(window, "ctrl+s")
        g.wait_for_state(log, lambda s: s["export_count"] >= 1, timeout=60)
        state = g.read_state_log(log)[-1]
        self.assertEqual(state["last_export"]["error"], "")
        app_png = state["last_export"]["paths"][0]
        self.assertEqual(os.path.basename(app_png), "probs_L0_H0_b0_causal_L6xS6.png")

        out = os.path.join(self.dir, "cli")
        result = subprocess.run([g.BIN, "export", bundle, "--format", "png", "--out", out],
                                capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        cli_png = result.stdout.split()[0]
        self.assertEqual(os.path.basename(cli_png), os.path.basename(app_png))
        with open(app_png, "rb") as a, open(cli_png, "rb") as b:
            self.assertEqual(a.read(), b.read(), "the app's figure differs from `attnscope export BUNDLE`")
        with open(app_png[:-4] + ".json") as f:
            saved = json.load(f)
        self.assertEqual((saved["heads"], saved["mask"], saved["scale"], saved["scale_factor"], saved["fill"]),
                         (2, "causal", "factor", 0.5, "1e9"))


if __name__ == "__main__":
    unittest.main()
