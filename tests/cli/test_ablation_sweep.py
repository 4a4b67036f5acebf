"""The ablation sweep (core/model/ablation_sweep.h, issue 37) and the induction probe's score.

Sweep: each head ablated alone (zero, mean), the change in the log-probability of the plain
run's top prediction at one position, against the float64 forward of hf_reference.py with its
z hook, on random gpt2 and llama (GQA) folders (test-only tool attnscope_sweep); tolerance
2e-3 (logits). A sweep cancelled at its first report stops there.

Probe: `analyze --json` on a repeated-random-tokens text of the shipped python-code model
(a first token, then N characters twice) scores induction as TransformerLens does, the mean
of pattern.diagonal(offset = 1 - N) of `model run`'s attentions.npy, in float64 NumPy.
"""
import json
import os
import random
import subprocess
import unittest

import numpy as np
import torch

import hf_reference as hf
import model_reference as ref

SWEEP_BIN = os.environ.get("ATTNSCOPE_SWEEP_BIN", "")
LOGIT_TOL = 2e-3
IDS = [3, 17, 42, 8, 8, 55, 21, 3, 90, 12]


def log_softmax64(logits):
    return torch.log_softmax(logits.to(torch.float64), -1)


class AblationSweep(unittest.TestCase):
    def check(self, family, opts, position, mode):
        folder = ref.case_dir("ablation-sweep", family)
        cfg, tensors = hf.make_model(family, **opts)
        stored = hf.write_folder(folder, cfg, tensors)
        result = subprocess.run([SWEEP_BIN, folder, ",".join(map(str, IDS)), str(position), mode],
                                capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        got = json.loads(result.stdout)
        plain, _ = hf.forward(cfg, stored, IDS)
        row = log_softmax64(plain)[position]
        top = int(torch.argmax(row))
        self.assertEqual(got["top"], top)
        self.assertAlmostEqual(got["logprob"], float(row[top]), delta=LOGIT_TOL)
        N, H = len(got["effect"]), len(got["effect"][0])
        want = np.zeros((N, H))
        for layer in range(N):
            for head in range(H):
                ablated, _ = hf.forward(cfg, stored, IDS, hooks=hf.Hooks(ablate=[(layer, head, mode)]))
                want[layer, head] = float(log_softmax64(ablated)[position, top] - row[top])
        np.testing.assert_allclose(np.array(got["effect"]), want, atol=LOGIT_TOL, rtol=0)
        self.assertGreater(np.abs(want).max(), 20 * LOGIT_TOL)  # the heads matter: the check is not vacuous
        self.assertEqual(got["cancelled_after"], 1)

    def test_zero_on_gpt2_at_the_last_position(self):
        self.check("gpt2", dict(seed=81, N=3), -1, "zero")

    def test_mean_on_llama_gqa_at_a_middle_position(self):
        self.check("llama", dict(seed=82, G=2, N=2), 6, "mean")

    def test_position_outside_the_text(self):
        folder = ref.case_dir("ablation-sweep", "bad")
        cfg, tensors = hf.make_model("gpt2", seed=81, N=2)
        hf.write_folder(folder, cfg, tensors)
        result = subprocess.run([SWEEP_BIN, folder, "3,4,5", "7", "zero"], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 1)
        self.assertIn("position 7 is outside the text of 3 tokens", result.stderr)


class InductionProbeScore(unittest.TestCase):
    def test_analyze_scores_the_stripe(self):
        model = os.path.join(ref.SHIPPED, "python-code")
        with open(os.path.join(model, "vocab.json")) as f:
            vocab = [c for c in json.load(f) if len(c) == 1 and c.isprintable() and c != "\ufffd"]
        N = 20
        rng = random.Random(5)
        half = "".join(rng.choice(vocab) for _ in range(N))
        text = "\n" + half + half
        out = ref.case_dir("ablation-sweep", "probe")
        run = subprocess.run([ref.BIN, "model", "run", model, "--text", text, "--out", out],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 0, run.stderr)
        attn = np.load(os.path.join(out, "attentions.npy")).astype(np.float64)  # [layers, B, H, L, L]
        self.assertEqual(attn.shape[-1], 2 * N + 1)
        analyzed = subprocess.run([ref.BIN, "analyze", model, "--text", text, "--json"],
                                  capture_output=True, text=True, timeout=120)
        self.assertEqual(analyzed.returncode, 0, analyzed.stderr)
        rows = {(r["layer"], r["head"]): r for r in json.loads(analyzed.stdout)}
        for (layer, head), r in rows.items():
            want = np.diagonal(attn[layer, 0, head], offset=1 - N).mean()
            self.assertAlmostEqual(r["induction"], want, delta=1e-6, msg="L%dH%d" % (layer, head))
        # python-code's induction head (L1H3) is one on the probe, its previous-token head is not.
        self.assertGreater(rows[(1, 3)]["induction"], 0.3)
        self.assertLess(rows[(0, 1)]["induction"], 0.2)

    def test_probe_on_a_bpe_tokenizer(self):
        """A Llama-2-style tokenizer (adds <s> itself, merges words, byte fallback): the probe
        starts with the tokenizer's own BOS and its text tokenizes back to exactly the probe."""
        folder = ref.case_dir("ablation-sweep", "probe-spm")
        vocab = hf.write_sentencepiece_bpe(folder)
        cfg, tensors = hf.make_model("llama", seed=83, N=1, V=len(vocab), P=64)
        hf.write_folder(folder, cfg, tensors)
        hf.write_sentencepiece_bpe(folder)
        result = subprocess.run([SWEEP_BIN, folder, "--probe", "20", "3"], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        probe = json.loads(result.stdout)
        ids = probe["ids"]
        self.assertEqual(len(ids), 41)
        self.assertEqual(ids[0], vocab["<s>"])
        self.assertEqual(ids[1:21], ids[21:])
        self.assertEqual(probe["typed"], ids)
        self.assertTrue(all(i not in (vocab["<unk>"], vocab["<s>"], vocab["</s>"]) for i in ids[1:]))


if __name__ == "__main__":
    unittest.main()
