"""`attnscope model run --lens` (docs/generation-and-lens.md, "The logit lens"): lens_ids.npy (int64) and
lens_probs.npy (float32), both [n_layers + 1, L, 5], against the logit lens of the
independent float64 references (model_reference.py, hf_reference.py): the output head of
each family (final norm, unembedding, gemma2's final soft-capping, BERT's masked-LM head)
on the embeddings and on the residual stream after every layer.

Tolerances: probabilities 1e-4 (absolute); ids equal wherever the reference's probabilities
are not tied: a gap to the neighbouring ranks of more than TIE_GAP times the larger one (a
float32 logit error of 1e-3 moves a probability by 0.1%); the last layer equals the softmax
of logits.npy within 1e-6.
"""
import os
import subprocess
import unittest

import numpy as np

import hf_reference as hf
import model_reference as ref

PROB_TOL = 1e-4
TIE_GAP = 2e-3
K = 5

# name, family, make_model options: every family the lens has a distinct head for.
HF_MODELS = [
    ("gpt2", "gpt2", dict(seed=41)),
    ("llama-gqa", "llama", dict(seed=42, G=2)),
    ("gemma2-softcap", "gemma2", dict(seed=43, G=2, window=4, N=3, final_cap=10.0)),  # raw logits ~40: capped
    ("neox-parallel", "gpt_neox", dict(seed=44)),
    ("qwen3-qk-norm", "qwen3", dict(seed=47, G=2, head_dim=16)),
    ("smollm3-nope", "smollm3", dict(seed=48, G=2, N=4)),
    ("gemma3-softcap", "gemma3_text", dict(seed=49, G=2, window=4, N=3, pattern=3, final_cap=10.0)),
    ("olmo2-post-norms", "olmo2", dict(seed=50, G=2)),
    ("phi3-fused-longrope", "phi3", dict(seed=51, G=2)),
    ("bert-mlm", "bert", dict(seed=45)),
]
SHIPPED = [("python-code", "def add(a, b):\n    return a + b\n"), ("reverse-digits", "3111445858=8585441113.")]


def run_lens(folder, out, *args):
    return subprocess.run([ref.BIN, "model", "run", folder, *args, "--lens", "--out", out], capture_output=True,
                          text=True, timeout=120)


class LensCase(unittest.TestCase):
    def check_lens(self, out, want, n_layers):
        """out: the run's folder; want: the reference's lens probabilities [N + 1, L, V]."""
        ids, probs = np.load(os.path.join(out, "lens_ids.npy")), np.load(os.path.join(out, "lens_probs.npy"))
        L = want.shape[1]
        self.assertEqual((ids.dtype, probs.dtype), (np.int64, np.float32))
        self.assertEqual(ids.shape, (n_layers + 1, L, K))
        self.assertEqual(probs.shape, (n_layers + 1, L, K))
        order = np.argsort(-want, axis=-1, kind="stable")[..., :K]
        want_top = np.take_along_axis(want, order, axis=-1)
        np.testing.assert_allclose(probs, want_top, atol=PROB_TOL, rtol=0)
        # Each id's probability is the reference's probability of that id.
        np.testing.assert_allclose(probs, np.take_along_axis(want, ids, axis=-1), atol=PROB_TOL, rtol=0)
        sorted_all = -np.sort(-want, axis=-1)[..., :K + 1]
        above = np.concatenate([np.full(sorted_all.shape[:-1] + (1,), 2.0), sorted_all[..., :K - 1]], axis=-1)
        this, below = sorted_all[..., :K], sorted_all[..., 1:K + 1]
        untied = (above - this > TIE_GAP * above) & (this - below > TIE_GAP * this)
        self.assertGreater(untied.mean(), 0.8)  # near-ties are rare
        np.testing.assert_array_equal(ids[untied], order[untied])
        logits = np.load(os.path.join(out, "logits.npy")).astype(np.float64)
        model_probs = np.exp(logits - logits.max(-1, keepdims=True))
        model_probs /= model_probs.sum(-1, keepdims=True)
        np.testing.assert_allclose(probs[-1], np.take_along_axis(model_probs, ids[-1], axis=-1), atol=1e-6, rtol=0)
        np.testing.assert_array_equal(ids[-1, :, 0], np.argmax(model_probs, axis=-1))


class ModelFolderLens(LensCase):
    def test_shipped_models(self):
        for name, text in SHIPPED:
            with self.subTest(model=name):
                folder = os.path.join(ref.SHIPPED, name)
                out = ref.case_dir("lens", name)
                os.rmdir(out)
                path = out + ".txt"
                with open(path, "w", encoding="utf-8", newline="") as f:
                    f.write(text)
                result = run_lens(folder, out, "--text-file", path)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertIn("lens_ids.npy and lens_probs.npy", result.stdout)
                model = ref.FolderModel(folder)
                ids, _ = model.encode(text)
                self.check_lens(out, ref.lens_probs(model, ids), model.cfg["n_layers"])

    def test_random_model_without_mlp_tied(self):
        folder = ref.case_dir("lens", "random-tied")
        ref.write_random_model(folder, N=3, mlp=False, tied=True, positional="sinusoidal", seed=5)
        out = folder + "-out"
        result = run_lens(folder, out, "--text", "f(a) (b)\nhead")
        self.assertEqual(result.returncode, 0, result.stderr)
        model = ref.FolderModel(folder)
        self.check_lens(out, ref.lens_probs(model, model.encode("f(a) (b)\nhead")[0]), 3)

    def test_without_flag_no_lens_files(self):
        out = ref.case_dir("lens", "no-flag")
        os.rmdir(out)
        result = ref.run_model(os.path.join(ref.SHIPPED, "python-code"), "x = 1", out, use_file=False)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertFalse(os.path.exists(os.path.join(out, "lens_ids.npy")))
        self.assertFalse(os.path.exists(os.path.join(out, "lens_probs.npy")))


class HfFolderLens(LensCase):
    def test_families(self):
        for name, family, opts in HF_MODELS:
            with self.subTest(model=name):
                folder = ref.case_dir("lens-hf", name)
                cfg, tensors = hf.make_model(family, **opts)
                stored = hf.write_folder(folder, cfg, tensors)
                ids = [int(i) for i in np.random.default_rng(opts["seed"]).integers(0, cfg["vocab_size"], 11)]
                out = folder + "-out"
                result = run_lens(folder, out, "--ids", ",".join(map(str, ids)))
                self.assertEqual(result.returncode, 0, result.stderr)
                n_layers = cfg.get("num_hidden_layers", cfg.get("n_layer"))
                self.check_lens(out, hf.lens_probs(cfg, stored, ids), n_layers)

    def test_gemma2_softcap_bounds_the_lens(self):
        """With a small final cap every logit lies in (-cap, cap): the top probability is at
        most e^(2 cap) / (e^(2 cap) + V - 1), at every layer."""
        folder = ref.case_dir("lens-hf", "gemma2-tight-cap")
        cap = 0.5
        cfg, tensors = hf.make_model("gemma2", seed=46, final_cap=cap)
        hf.write_folder(folder, cfg, tensors)
        out = folder + "-out"
        result = run_lens(folder, out, "--ids", "1,2,3,4")
        self.assertEqual(result.returncode, 0, result.stderr)
        bound = np.exp(2 * cap) / (np.exp(2 * cap) + cfg["vocab_size"] - 1)
        self.assertLessEqual(np.load(os.path.join(out, "lens_probs.npy")).max(), bound + 1e-6)

    def test_encoder_without_head_refused(self):
        folder = ref.case_dir("lens-hf", "bert-no-head")
        cfg, tensors = hf.make_model("bert", seed=47, head=False)
        hf.write_folder(folder, cfg, tensors)
        out = folder + "-out"
        result = run_lens(folder, out, "--ids", "1,2,3")
        self.assertEqual(result.returncode, 1)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
        self.assertIn("masked-LM head", result.stderr)
        self.assertIn(folder, result.stderr)
        self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
