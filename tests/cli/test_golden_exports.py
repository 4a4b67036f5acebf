"""Golden exports: `attnscope export` of a core trace gives the files that main gave before the
view model existed (commit a6b71f1): the same PNG pixels, and .npy files of the same header
whose values agree within 2e-6 (the kernel of issue 9, OpenBLAS GEMMs and a vectorised exp,
rounds the last bit differently; masked cells stay exactly -inf / 0).

The golden files in golden/<case>/ carry the old names (probs_head1_b0_...); the layer was
added to the names later (probs_L0_H1_b0_...), which goldenName() maps. The golden bundle
and settings in golden/inputs/ are inputs, not outputs.

Provenance (golden/PROVENANCE.md, golden/manifest.json): the goldens are the program's own
output, so each one is tied to an independent check that it was verified against, and that
check runs here too (GoldenProvenanceTest):
  - every .npy: float64 NumPy from the formulas (reference.py: numpy_reference for the padding
    bundle from its inputs; softmax / dropout scaling / masks rebuilt from the spec text for the
    demo and the settings case, whose Q and K come from `attnscope compute`);
  - every .png: the figure of the .npy beside it, its pixels reviewed by eye when recorded and
    guarded by the figure tests (tests/figure); no independent renderer exists here.
manifest.json holds each golden file's SHA-256 and its check; a golden that differs from the
manifest fails, so a regeneration is only taken in by a reviewed change of the manifest.

Regenerate (an explicit, reviewed step, with a binary you trust):
  ATTNSCOPE_BIN=... /usr/bin/python3 test_golden_exports.py --regenerate
rewrites golden/, runs the independent checks on the new files (refusing to record on a
failure) and rewrites golden/manifest.json; review `git diff tests/cli/golden` (the PNGs by
eye) before committing. Run without arguments the file only runs the tests.
Environment: ATTNSCOPE_BIN (the binary), ATTNSCOPE_TEST_TMP (scratch folder).
"""
import hashlib
import json
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
MANIFEST = os.path.join(GOLDEN, "manifest.json")

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


def golden_files():
    """Every file under golden/ (inputs included) as a path relative to golden/, but the manifest."""
    found = []
    for root, _, files in os.walk(GOLDEN):
        for name in files:
            rel = os.path.relpath(os.path.join(root, name), GOLDEN)
            if rel not in ("manifest.json", "PROVENANCE.md"):
                found.append(rel)
    return sorted(found)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


CHECK_BUNDLE = ("numpy_reference (reference.py, float64) of golden/inputs/padding_bundle, heads 4, mask padding "
                "rebuilt by spec_mask")
CHECK_SOFTMAX = ("scores = Q_h K_h^T / sqrt(d) from `attnscope compute`'s q.npy/k.npy, the mask rebuilt from the spec "
                 "text, probs = float64 softmax of the scores")
CHECK_DROPOUT = ("probs = float64 softmax of the exported scores (mask rebuilt from the spec text), each cell either "
                 "dropped to 0 or scaled by 1/(1-p)")
CHECK_PNG = "figure of the .npy beside it: pixels reviewed by eye when recorded; rendering guarded by tests/figure"
CHECK_INPUT = "input, written by make_inputs() from a seeded NumPy generator"


def check_for(rel):
    """The independent check a golden file is verified against (stated in the manifest)."""
    if rel.startswith("inputs" + os.sep):
        return CHECK_INPUT
    if rel.endswith(".png"):
        return CHECK_PNG
    case = rel.split(os.sep)[0]
    return {"bundle_padding": CHECK_BUNDLE, "demo_causal": CHECK_SOFTMAX, "settings_dropout_log": CHECK_DROPOUT}[case]


def softmax_rows(scores):
    """float64 softmax over the last axis; -inf cells 0, a row of -inf all 0."""
    scores = scores.astype(np.float64)
    finite = np.isfinite(scores)
    m = np.where(finite.any(-1, keepdims=True), np.where(finite, scores, -np.inf).max(-1, keepdims=True), 0.0)
    e = np.where(finite, np.exp(np.where(finite, scores, 0.0) - m), 0.0)
    total = e.sum(-1, keepdims=True)
    return np.where(total > 0, e / np.where(total > 0, total, 1.0), 0.0)


def golden(case, prefix):
    names = [n for n in os.listdir(os.path.join(GOLDEN, case)) if n.startswith(prefix) and n.endswith(".npy")]
    assert len(names) == 1, (case, prefix, names)
    return np.load(os.path.join(GOLDEN, case, names[0])).astype(np.float64)


def independent_failures():
    """The independent checks of the .npy goldens (check_for): a list of messages, empty when all hold."""
    failures = []

    def close(name, got, want, atol=2e-6):
        got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
        if got.shape != want.shape:
            failures.append(f"{name}: shape {got.shape}, the reference has {want.shape}")
            return
        same_inf = np.array_equal(np.isneginf(got), np.isneginf(want))
        fin = np.isfinite(want)
        err = float(np.max(np.abs(got[fin] - want[fin]), initial=0.0)) if same_inf else np.inf
        if not same_inf or err > atol:
            failures.append(f"{name}: differs from its independent reference by {err:.3g} (tolerance {atol:g})"
                            + ("" if same_inf else ", -inf cells differ"))

    # bundle_padding: float64 reference from the inputs alone.
    bundle = os.path.join(INPUTS, "padding_bundle")
    case = {n[:-4]: np.load(os.path.join(bundle, n)) for n in os.listdir(bundle) if n.endswith(".npy")}
    kp = case.pop("key_padding").astype(bool)
    B, L = case["query"].shape[:2]
    allowed = ref.spec_mask("padding", B, L, L, key_padding=kp)
    want = ref.numpy_reference(case, 4, allowed)
    close("bundle_padding/probs (b1, head 2)", golden("bundle_padding", "probs_"), want["probs"][1, 2])
    close("bundle_padding/scores (b1, head 2)", golden("bundle_padding", "scores_"), want["scores"][1, 2], atol=1e-5)
    close("bundle_padding/mask (b1)", golden("bundle_padding", "mask_"), allowed[1].astype(np.float64), atol=0)
    close("bundle_padding/grid (b1, heads 0-3)", golden("bundle_padding", "grid_"), want["probs"][1])

    # demo_causal: Q and K from `attnscope compute --demo`, the rest from the formulas.
    out = ref.case_dir("golden_check", "demo_causal")
    done = ref.run_compute(["--demo", "--mask", "causal", "--out", out])
    if done.returncode != 0:
        return failures + [f"compute --demo: {done.stderr}"]
    q, k = (np.load(os.path.join(out, n)).astype(np.float64) for n in ("q.npy", "k.npy"))  # [B, H, T, d]
    L, d = q.shape[2], q.shape[3]
    causal = ref.spec_mask("causal", 1, L, L)[0]
    scores = np.where(causal, np.einsum("hld,hsd->hls", q[0], k[0]) / np.sqrt(d), -np.inf)
    close("demo_causal/scores (head 1)", golden("demo_causal", "scores_"), scores[1], atol=1e-5)
    close("demo_causal/probs (head 1)", golden("demo_causal", "probs_"), softmax_rows(scores)[1])
    close("demo_causal/mask", golden("demo_causal", "mask_"), causal.astype(np.float64), atol=0)
    close("demo_causal/grid (heads)", golden("demo_causal", "grid_"), softmax_rows(scores))

    # settings_dropout_log: dropout p = 0.25 on the softmax of the exported scores.
    with open(os.path.join(INPUTS, "dropout_log.json")) as f:
        settings = json.load(f)
    out = ref.case_dir("golden_check", "settings_scores")
    export(["--settings", os.path.join(INPUTS, "dropout_log.json"), "--what", "scores", "--heads", "all"], out)
    p = settings["dropout"]
    grid = golden("settings_dropout_log", "grid_")
    H, L = grid.shape[0], grid.shape[1]
    allowed = ref.spec_mask(settings["mask"], 1, L, L)[0]
    for h in range(H):
        names = [n for n in os.listdir(out) if n.startswith(f"scores_L0_H{h}_") and n.endswith(".npy")]
        if len(names) != 1:
            failures.append(f"settings_dropout_log: export of scores gave {names} for head {h}")
            continue
        s = np.load(os.path.join(out, names[0])).astype(np.float64)
        if not np.array_equal(np.isfinite(s), allowed):
            failures.append(f"settings_dropout_log/scores head {h}: masked cells differ from the spec text's mask")
        kept = softmax_rows(s) / (1 - p)
        g = grid[h]
        ok = (np.abs(g) <= 2e-6) | (np.abs(g - kept) <= 2e-6 * np.maximum(1, kept))
        if not ok.all() or (g[~allowed] != 0).any():
            failures.append(f"settings_dropout_log/grid head {h}: cells neither dropped nor softmax/(1-p): "
                            f"{np.argwhere(~ok).tolist()}")
        if not (g != 0).any() or (g[allowed] == 0).all():
            failures.append(f"settings_dropout_log/grid head {h}: no cell kept")
        if h == 0:
            close("settings_dropout_log/probs (head 0) vs grid", golden("settings_dropout_log", "probs_"), g, atol=0)
    return failures


class GoldenProvenanceTest(unittest.TestCase):
    """The goldens are the reviewed files (manifest), and each holds against its independent check."""

    def test_every_golden_file_is_the_reviewed_one(self):
        with open(MANIFEST) as f:
            manifest = json.load(f)["files"]
        self.assertEqual(sorted(manifest), golden_files(),
                         "golden/ and golden/manifest.json list different files: regenerate with --regenerate "
                         "and review the diff")
        for rel, entry in manifest.items():
            with self.subTest(file=rel):
                self.assertEqual(entry["verified_against"], check_for(rel), rel)
                self.assertEqual(sha256(os.path.join(GOLDEN, rel)), entry["sha256"],
                                 f"golden/{rel} is not the file recorded in golden/manifest.json: goldens change "
                                 f"only through --regenerate and a reviewed manifest")

    def test_goldens_agree_with_their_independent_checks(self):
        failures = independent_failures()
        self.assertEqual(failures, [], "\n".join(failures))


def regenerate():
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
    failures = independent_failures()
    if failures:
        sys.exit("not recorded, the new goldens fail their independent checks:\n" + "\n".join(failures))
    files = {rel: {"sha256": sha256(os.path.join(GOLDEN, rel)), "verified_against": check_for(rel)}
             for rel in golden_files()}
    with open(MANIFEST, "w") as f:
        json.dump({"note": "written by test_golden_exports.py --regenerate after the independent checks passed; "
                           "review the diff (PNGs by eye) before committing", "files": files}, f, indent=1)
        f.write("\n")
    print(f"recorded {len(files)} files in {MANIFEST}: review `git diff` before committing")


if __name__ == "__main__":
    if sys.argv[1:] == ["--regenerate"]:
        regenerate()
    else:
        unittest.main()
