"""Golden exports: `attnscope export` of a core trace gives the files that main gave before the
view model existed (commit a6b71f1): the same PNG pixels, and .npy files of the same header
whose values agree within 2e-6 (the kernel of issue 9, OpenBLAS GEMMs and a vectorised exp,
rounds the last bit differently; masked cells stay exactly -inf / 0).

The golden files in golden/<case>/ carry the old names (probs_head1_b0_...); the layer was
added to the names later (probs_L0_H1_b0_...), which goldenName() maps. The golden bundle
and settings in golden/inputs/ are inputs, not outputs.

Regenerate (only on purpose, with a binary you trust): /usr/bin/python3 test_golden_exports.py
Environment: ATTNSCOPE_BIN (the binary), ATTNSCOPE_TEST_TMP (scratch folder).
"""
import os
import re
import shutil
import sys
import unittest

import numpy as np

import reference as ref

try:
    from PIL import Image
except ImportError:  # pragma: no cover - depends on the machine
    Image = None

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "golden")
INPUTS = os.path.join(GOLDEN, "inputs")

# case name -> export arguments (before --out / --format)
CASES = {
    "demo_causal": ["--demo", "--mask", "causal", "--what", "probs,scores,mask,grid", "--heads", "1",
                    "--cell-px", "12"],
    "bundle_padding": [os.path.join(INPUTS, "padding_bundle"), "--heads-count", "4", "--mask", "padding",
                       "--batch", "1", "--what", "probs,scores,mask,grid", "--heads", "2", "--cell-px", "16"],
    "settings_dropout_log": ["--settings", os.path.join(INPUTS, "dropout_log.json"), "--what", "probs,grid",
                             "--heads", "0"],
}
FORMATS = "png,npy"


def make_inputs():
    """The golden bundle (B=2, L=S=5, D=8, key padding) and settings file (dropout, log scale)."""
    case = ref.make_case(7, B=2, L=5, D=8)
    case["key_padding"] = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], dtype=bool)
    ref.write_bundle(os.path.join(INPUTS, "padding_bundle"), case,
                     texts={"tokens.txt": "a\nb\nc\nd\ne\n"})
    with open(os.path.join(INPUTS, "dropout_log.json"), "w") as f:
        f.write('{"source": "text", "text": "one two three four five six", "heads": 2, "head_dim": 4,\n'
                ' "mask": "causal+window:3", "dropout": 0.25, "train": true, "seed": 5,\n'
                ' "prob_colormap": "magma", "log_scale": true, "cell_px": 20}\n')


def goldenName(old_name):
    """probs_head1_b0_... (a6b71f1) -> probs_L0_H1_b0_... (names carry the layer)."""
    return re.sub(r"^(probs|scores)_head(\d+)_", r"\1_L0_H\2_", old_name)


def export(args, out):
    proc = ref.subprocess.run([ref.BIN, "export", *args, "--format", FORMATS, "--out", out],
                              capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise AssertionError(f"export {' '.join(args)} -> {proc.returncode}\n{proc.stderr}")
    return [p for p in proc.stdout.split() if not p.endswith(".json")]


class GoldenExportTest(unittest.TestCase):
    def test_core_trace_exports_match_golden(self):
        self.assertIsNotNone(Image, "python3-pil is needed")
        for case, args in CASES.items():
            with self.subTest(case=case):
                out = ref.case_dir("golden", case)
                written = sorted(os.path.basename(p) for p in export(args, out))
                golden_dir = os.path.join(GOLDEN, case)
                expected = sorted(goldenName(name) for name in os.listdir(golden_dir))
                self.assertEqual(written, expected)
                for old in os.listdir(golden_dir):
                    new = os.path.join(out, goldenName(old))
                    old = os.path.join(golden_dir, old)
                    if old.endswith(".npy"):
                        a, b = np.load(old), np.load(new)
                        self.assertEqual((a.dtype, a.shape), (b.dtype, b.shape), new)
                        np.testing.assert_array_equal(np.isfinite(a), np.isfinite(b), err_msg=new)
                        np.testing.assert_array_equal(a[~np.isfinite(a)], b[~np.isfinite(b)], err_msg=new)
                        np.testing.assert_array_equal(a == 0, b == 0, err_msg=new)
                        finite = np.isfinite(a)
                        np.testing.assert_allclose(b[finite], a[finite], rtol=0, atol=2e-6, err_msg=new)
                    else:
                        with Image.open(old) as a, Image.open(new) as b:
                            self.assertEqual(a.size, b.size, new)
                            self.assertEqual(a.convert("RGB").tobytes(), b.convert("RGB").tobytes(),
                                             f"{new}: pixels differ from {old}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit("usage: ATTNSCOPE_BIN=... /usr/bin/python3 test_golden_exports.py  (regenerates golden/)")
    make_inputs()
    for case, args in CASES.items():
        target = os.path.join(GOLDEN, case)
        shutil.rmtree(target, ignore_errors=True)
        os.makedirs(target)
        for path in export(args, target):
            print(path)
        for name in os.listdir(target):  # the settings JSON names local paths: not golden
            if name.endswith(".json"):
                os.remove(os.path.join(target, name))
