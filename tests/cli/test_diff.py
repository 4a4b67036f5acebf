"""`attnscope diff MODEL_A MODEL_B (--text T | --ids I) --out D [--json]` (docs/cli.md, "Quantization
drift"): drift_max_abs.npy and drift_js.npy [n_layers, H] float32 and next_token.json, checked
against a float64 NumPy reference of the drift on
- two GGUF files of one model made by llama.cpp's converter (F16 and Q8_0), whose float64
  forwards run on gguf-py's dequantization of each file;
- two Hugging Face folders, A and a copy with perturbed weights, on a text (byte-level BPE).
The same numbers from attnscope's own maps and logits (`model run`) agree to float32 rounding.
Different shapes or tokenizations: one line, exit 1, nothing written."""
import json
import os
import subprocess
import unittest

import numpy as np
import torch

import hf_reference as hf
import model_reference as mref
from test_gguf_model import dequantized_tensors, make_gguf

IDS = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]
TEXT = "the heads attend"


def diff(a, b, out, *args):
    return subprocess.run([mref.BIN, "diff", a, b, *args, "--out", out], capture_output=True, text=True, timeout=120)


def js_rows(p, q):
    """float64 Jensen-Shannon divergence of every row of p and q [..., S] (natural log)."""
    m = (p + q) / 2

    def kl(x):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(x > 0, x * np.log(x / m), 0.0).sum(-1)
    return 0.5 * kl(p) + 0.5 * kl(q)


def drift_reference(maps_a, maps_b, logits_a, logits_b):
    """max |P - Q| and mean-over-rows JS per [layer, head] of maps [N, H, L, L]; per position the top-1 ids
    and KL(A || B) of softmax(logits) [L, V]; all float64."""
    a, b = np.asarray(maps_a, np.float64), np.asarray(maps_b, np.float64)
    la = torch.log_softmax(torch.tensor(logits_a, dtype=torch.float64), -1).numpy()
    lb = torch.log_softmax(torch.tensor(logits_b, dtype=torch.float64), -1).numpy()
    kl = (np.exp(la) * (la - lb)).sum(-1)
    return np.abs(a - b).max(axis=(2, 3)), js_rows(a, b).mean(-1), la.argmax(-1), lb.argmax(-1), kl


class Diff(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = mref.case_dir("diff", "models")
        cls.cfg, tensors = hf.make_model("llama", seed=7, G=2, V=256)
        cls.a = os.path.join(cls.dir, "a")
        cls.stored_a = hf.write_folder(cls.a, cls.cfg, tensors)
        hf.write_byte_level_bpe(cls.a)
        r = hf.Rand(70)
        perturbed = {n: t + r(*t.shape, std=0.02) if n.endswith("proj.weight") else t for n, t in tensors.items()}
        cls.b = os.path.join(cls.dir, "b")
        cls.stored_b = hf.write_folder(cls.b, cls.cfg, perturbed)
        hf.write_byte_level_bpe(cls.b)

    def check(self, out, ref, maps_tol, js_tol, kl_tol):
        max_abs, js, top_a, top_b, kl = ref
        for name, want, tol in (("drift_max_abs.npy", max_abs, maps_tol), ("drift_js.npy", js, js_tol)):
            got = np.load(os.path.join(out, name))
            self.assertEqual(got.dtype, np.float32)
            self.assertEqual(got.shape, want.shape)
            np.testing.assert_allclose(got, want, atol=tol, rtol=0, err_msg=name)
        with open(os.path.join(out, "next_token.json")) as f:
            positions = json.load(f)["positions"]
        self.assertEqual([p["position"] for p in positions], list(range(len(kl))))
        np.testing.assert_allclose([p["kl"] for p in positions], kl, atol=kl_tol, rtol=0)
        for p in positions:
            self.assertEqual(p["agree"], p["top1_a"] == p["top1_b"])
        return positions, top_a, top_b

    def own_reference(self, a, b, args):
        """The reference drift of attnscope's own maps and logits (`model run` of each)."""
        outs = []
        for model in (a, b):
            out = os.path.join(self.dir, "run-%d" % len(os.listdir(self.dir)))
            done = subprocess.run([mref.BIN, "model", "run", model, *args, "--out", out], capture_output=True,
                                  text=True, timeout=120)
            self.assertEqual(done.returncode, 0, done.stderr)
            outs.append(out)
        maps = [np.load(os.path.join(o, "attentions.npy"))[:, 0] for o in outs]
        logits = [np.load(os.path.join(o, "logits.npy")) for o in outs]
        return drift_reference(maps[0], maps[1], logits[0], logits[1])

    def forward_reference(self, weights_a, weights_b, ids):
        """The reference drift of the float64 forwards of the two weight sets."""
        logits_a, maps_a = hf.forward(self.cfg, weights_a, ids)
        logits_b, maps_b = hf.forward(self.cfg, weights_b, ids)
        return drift_reference(torch.stack(maps_a).numpy(), torch.stack(maps_b).numpy(), logits_a.numpy(),
                               logits_b.numpy())

    def test_two_gguf_files_of_one_model(self):
        f16, q8 = os.path.join(self.dir, "f16.gguf"), os.path.join(self.dir, "q8_0.gguf")
        make_gguf(self.a, f16, "f16")
        make_gguf(self.a, q8, "q8_0")
        out = os.path.join(self.dir, "gguf-drift")
        done = diff(f16, q8, out, "--ids", ",".join(map(str, IDS)), "--json")
        self.assertEqual(done.returncode, 0, done.stderr)
        summary = json.loads(done.stdout)
        ref = self.forward_reference(dequantized_tensors(f16, self.cfg, self.stored_a),
                                     dequantized_tensors(q8, self.cfg, self.stored_a), IDS)
        self.assertGreater(ref[0].max(), 1e-4)  # Q8_0 moved the maps: the test measures something
        positions, top_a, top_b = self.check(out, ref, 2e-4, 2e-5, 2e-4)
        self.assertEqual(summary["tokens"], len(IDS))
        self.assertEqual(summary["next_token"]["agree"], sum(p["agree"] for p in positions))
        self.assertAlmostEqual(summary["drift_max_abs"]["max"], float(ref[0].max()), delta=2e-4)
        self.check(out, self.own_reference(f16, q8, ["--ids", ",".join(map(str, IDS))]), 1e-6, 1e-7, 1e-6)

    def test_a_folder_and_a_perturbed_copy_on_a_text(self):
        out = os.path.join(self.dir, "hf-drift")
        done = diff(self.a, self.b, out, "--text", TEXT)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("top-1 agrees at", done.stdout)
        ids = list(TEXT.encode("utf-8"))  # byte-level BPE without merges: id = byte
        ref = self.forward_reference(self.stored_a, self.stored_b, ids)
        positions, top_a, top_b = self.check(out, ref, 1e-4, 1e-5, 1e-3)
        for p, a, b in zip(positions, top_a, top_b):  # no near ties in these logits
            self.assertEqual((p["top1_a"], p["top1_b"]), (a, b))
        self.check(out, self.own_reference(self.a, self.b, ["--text", TEXT]), 1e-6, 1e-7, 1e-6)

    def refuse(self, a, b, *fragments, args=("--ids", "1,2")):
        out = os.path.join(self.dir, "refused")
        done = diff(a, b, out, *args)
        self.assertEqual(done.returncode, 1, done.stderr)
        self.assertEqual(len(done.stderr.strip().splitlines()), 1, done.stderr)
        for fragment in fragments:
            self.assertIn(fragment, done.stderr)
        self.assertFalse(os.path.exists(out))

    def test_different_shapes_and_tokenizations_are_refused(self):
        cfg, tensors = hf.make_model("llama", seed=7, G=2, V=256, N=3)
        deeper = os.path.join(self.dir, "deeper")
        hf.write_folder(deeper, cfg, tensors)
        self.refuse(self.a, deeper, "are not two files of one model", "2 layers", "3 layers")
        wordpiece = os.path.join(self.dir, "wordpiece")
        hf.write_folder(wordpiece, self.cfg, hf.make_model("llama", seed=7, G=2, V=256)[1])
        hf.write_wordpiece(wordpiece)
        self.refuse(self.a, wordpiece, "tokenize the text differently", args=("--text", "the head"))


if __name__ == "__main__":
    unittest.main()
