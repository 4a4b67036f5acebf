"""Configure once: a bundle's bundle.json (heads, mask, scale, fill, dropout, seed) gives the
same maps in `attnscope compute` and `attnscope export` (the app: tests/gui/test_bundle_json_gui.py).
Before configureRun existed, export ignored bundle.json's mask and heads; these cases catch it.

Environment: ATTNSCOPE_BIN (the binary), ATTNSCOPE_TEST_TMP (scratch folder).
"""
import os
import subprocess
import unittest

import numpy as np

import reference as ref

# bundle.json contents -> what they mean for the independent reference
CASES = [
    ("heads_mask_scale_fill", dict(heads=2, mask="causal", scale=0.5, fill="1e9", seed=3)),
    ("window_no_scale", dict(heads=4, mask="window:1", scale="none")),
    ("padding_default_scale", dict(heads=2, mask="causal+padding", scale="default")),
    ("dropout_seed", dict(heads=2, mask="causal", dropout=0.25, seed=11)),
]


def make_bundle(path, meta):
    """B=2, L=6, D=8 with weights, key padding [6, 4] and the given bundle.json."""
    case = ref.make_case(21, B=2, L=6, D=8)
    case["valid_lens"] = np.array([6, 4], dtype=np.int64)
    ref.write_bundle(path, case, meta=meta)
    return case


def run(*args):
    proc = subprocess.run([ref.BIN, *args], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise AssertionError(f"attnscope {' '.join(args)} -> {proc.returncode}\n{proc.stderr}")
    return proc.stdout


class BundleJsonConsistencyTest(unittest.TestCase):
    def test_compute_and_export_read_bundle_json_alike(self):
        for name, meta in CASES:
            with self.subTest(case=name):
                tmp = ref.case_dir("bundle_json", name)
                bundle = os.path.join(tmp, "bundle")
                case = make_bundle(bundle, meta)
                computed = os.path.join(tmp, "computed")
                run("compute", bundle, "--out", computed)
                out = ref.load_outputs(computed)
                H = meta["heads"]
                self.assertEqual(out["shapes"]["sizes"]["H"], H)
                self.assertEqual(out["shapes"]["mask"], meta["mask"])

                # compute against the float64 reference with bundle.json's parameters
                allowed = ref.combined_mask(meta["mask"], 2, 6, 6, valid_lens=case["valid_lens"])
                scale = {"none": 1.0, "default": None}.get(meta.get("scale"), meta.get("scale"))
                want = ref.numpy_reference(case, H, allowed, scale=scale, fill=meta.get("fill", "inf"))
                np.testing.assert_allclose(out["probs"], want["probs"], atol=1e-5)
                shown = out.get("probs_dropped", out["probs"])  # what a heatmap shows

                # export: every head of every batch item equals compute's, bit for bit
                exported = os.path.join(tmp, "exported")
                paths = run("export", bundle, "--heads", "all", "--batch", "1", "--what", "probs,scores,mask",
                            "--format", "npy", "--out", exported).split()
                mask_name = meta["mask"].replace(":", "").replace("-", "")
                for h in range(H):
                    base = os.path.join(exported, f"probs_L0_H{h}_b1_{mask_name}_L6xS6.npy")
                    self.assertIn(base, paths)
                    self.assertEqual(np.load(base).tobytes(), shown[1, h].tobytes(), base)
                    scores = np.load(base.replace("probs_", "scores_"))
                    self.assertEqual(scores.tobytes(), out["scores"][1, h].tobytes())
                mask = np.load(os.path.join(exported, f"mask_b1_{mask_name}_L6xS6.npy"))
                np.testing.assert_array_equal(mask, out["mask"][1].astype(np.float32))

    def test_flags_still_override_bundle_json(self):
        tmp = ref.case_dir("bundle_json", "flags")
        bundle = os.path.join(tmp, "bundle")
        make_bundle(bundle, dict(heads=4, mask="causal"))
        paths = run("export", bundle, "--heads-count", "2", "--mask", "none", "--heads", "all", "--format", "npy",
                    "--out", os.path.join(tmp, "out")).split()
        self.assertEqual([os.path.basename(p) for p in paths if p.endswith(".npy")],
                         ["probs_L0_H0_b0_nomask_L6xS6.npy", "probs_L0_H1_b0_nomask_L6xS6.npy"])


if __name__ == "__main__":
    unittest.main()
