"""`attnscope export --what rollout,flow` (issue 10): attention rollout and flow as maps of
their own, one file set per layer, named rollout_L<l>_b<b>_<mask>_L<L>xS<S>.<ext>.

Each .npy is compared with an independent float64 reference (NumPy matrix products for
rollout, networkx's Edmonds-Karp maximum flow for flow: test_analyze.reference_rollout_flow)
within 1e-6 (rollout) and 1e-5 (flow, a sum of float32 capacities). Sources that cannot have
them (one layer, cross-attention) fail with one line and write nothing."""
import os
import subprocess
import unittest

import numpy as np

import reference as ref
from test_analyze import reference_rollout_flow

TOKENS = "the cat sat on a mat".split()


def random_maps(seed, layers, B, H, L, S):
    x = np.random.default_rng(seed).normal(size=(layers, B, H, L, S)) * 2
    p = np.exp(x - x.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)).astype(np.float32)


def write_bundle(folder, maps, tokens=True):
    os.makedirs(folder, exist_ok=True)
    np.save(os.path.join(folder, "attentions.npy"), maps)
    if tokens:
        with open(os.path.join(folder, "tokens.txt"), "w") as f:
            f.write("\n".join(TOKENS[:maps.shape[3]]) + "\n")


def export(*args):
    return subprocess.run([ref.BIN, "export", *args], capture_output=True, text=True, timeout=300)


class ExportAcrossLayers(unittest.TestCase):
    def test_rollout_and_flow_of_every_layer_against_references(self):
        folder = ref.case_dir("export_across", "three_layers")
        maps = random_maps(3, layers=3, B=2, H=3, L=6, S=6)
        write_bundle(os.path.join(folder, "bundle"), maps)
        want_rollout, want_flow = reference_rollout_flow(maps)
        out = os.path.join(folder, "out")
        result = export(os.path.join(folder, "bundle"), "--what", "rollout,flow", "--batch", "1",
                        "--format", "npy,csv,png", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        names = sorted(os.path.basename(p) for p in result.stdout.split())
        want_names = sorted("%s_L%d_b1_imported_L6xS6.%s" % (what, layer, ext) for what in ("rollout", "flow")
                            for layer in range(3) for ext in ("npy", "csv", "png", "json"))
        self.assertEqual(names, want_names)
        for layer in range(3):
            rollout = np.load(os.path.join(out, "rollout_L%d_b1_imported_L6xS6.npy" % layer))
            flow = np.load(os.path.join(out, "flow_L%d_b1_imported_L6xS6.npy" % layer))
            self.assertEqual((rollout.dtype, rollout.shape), (np.float32, (6, 6)))
            np.testing.assert_allclose(rollout, want_rollout[layer, 1], atol=1e-6)
            np.testing.assert_allclose(flow, want_flow[layer, 1], atol=1e-5)
            np.testing.assert_allclose(rollout.sum(axis=1), 1, atol=1e-5)
        # The CSV holds the same matrix with the tokens as labels (input tokens across, output positions down).
        with open(os.path.join(out, "rollout_L2_b1_imported_L6xS6.csv")) as f:
            rows = [line.rstrip("\n").split(",") for line in f]
        self.assertEqual(rows[0][1:], TOKENS)
        self.assertEqual([r[0] for r in rows[1:]], TOKENS)
        np.testing.assert_allclose(np.array([[float(v) for v in r[1:]] for r in rows[1:]]), want_rollout[2, 1],
                                   atol=1e-6)
        # Deeper layers mix more: rollout after layer 2 is not layer 0's matrix.
        self.assertGreater(np.abs(want_rollout[2, 1] - want_rollout[0, 1]).max(), 1e-3)

    def test_layers_flag_picks_the_layers(self):
        folder = ref.case_dir("export_across", "layers_flag")
        maps = random_maps(4, layers=4, B=1, H=2, L=5, S=5)
        write_bundle(os.path.join(folder, "bundle"), maps, tokens=False)
        out = os.path.join(folder, "out")
        result = export(os.path.join(folder, "bundle"), "--what", "rollout", "--layers", "1,3", "--format", "npy",
                        "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(sorted(os.listdir(out)), ["rollout_L1_b0_imported_L5xS5.json", "rollout_L1_b0_imported_L5xS5.npy",
                                                   "rollout_L3_b0_imported_L5xS5.json", "rollout_L3_b0_imported_L5xS5.npy"])
        eye = np.eye(5)
        acc = eye
        for layer in range(4):  # rollout written out here once more, straight from the paper
            a = 0.5 * maps[layer, 0].astype(np.float64).mean(axis=0) + 0.5 * eye
            acc = (a / a.sum(axis=1, keepdims=True)) @ acc
            if layer in (1, 3):
                np.testing.assert_allclose(np.load(os.path.join(out, "rollout_L%d_b0_imported_L5xS5.npy" % layer)),
                                           acc, atol=1e-6)

    def test_sources_without_rollout_fail_with_one_line(self):
        folder = ref.case_dir("export_across", "refused")
        write_bundle(os.path.join(folder, "cross"), random_maps(5, layers=2, B=1, H=2, L=4, S=6), tokens=False)
        cases = [
            (["--demo", "--what", "probs,rollout"], "rollout: rollout and flow combine several layers; this source has 1 layer"),
            ([os.path.join(folder, "cross"), "--what", "flow"],
             "flow: rollout and flow need self-attention (L = S); these maps are L = 4 x S = 6"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                out = os.path.join(folder, "out")
                result = export(*args, "--out", out)
                self.assertEqual(result.returncode, 1, result.stderr)
                self.assertEqual(result.stderr, "attnscope export: " + message + "\n")
                self.assertFalse(os.path.exists(out) and os.listdir(out), "nothing is written")

    def test_unknown_what_lists_the_values(self):
        result = export("--demo", "--what", "rolout")
        self.assertEqual(result.returncode, 2)
        self.assertIn("--what: unknown value 'rolout' (use probs, scores, mask, rollout, flow or grid)", result.stderr)


if __name__ == "__main__":
    unittest.main()
