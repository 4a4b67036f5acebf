"""Interventions (docs/cli.md, "Interventions"): `model run --ablate/--knockout` and
`model patch` on random Hugging Face folders of every family, against the independent float64
forward of hf_reference.py with its hooks (z before o_proj, scores before the softmax, the
residual stream entering a layer); and the one-line errors for bad input, nothing written.

Tolerances: maps 1e-4, logits and patching metrics 2e-3 (absolute).
"""
import json
import os
import subprocess
import unittest

import numpy as np
import torch

import hf_reference as hf
import model_reference as ref

MAP_TOL = 1e-4
LOGIT_TOL = 2e-3

# family, make_model options: every family, GQA, windows, soft-caps, q/k norms, NoPE layers.
FAMILIES = [
    ("gpt2", dict(seed=71, N=3)),
    ("llama", dict(seed=72, G=2, N=3)),
    ("mistral", dict(seed=73, G=2, window=4, N=3)),
    ("qwen2", dict(seed=74, G=2, N=3)),
    ("qwen3", dict(seed=75, G=2, head_dim=16, N=3)),
    ("smollm3", dict(seed=76, G=2, N=3, no_rope_interval=2)),
    ("gemma2", dict(seed=77, G=2, window=3, N=3)),
    ("gpt_neox", dict(seed=78, rotary=0.5, N=3)),
    ("bert", dict(seed=79, N=3)),
]

# --ablate / --knockout, and the same as reference hooks (layer, head or None, ...).
CASES = [
    ("zero", ["--ablate", "L1H2"], dict(ablate=[(1, 2, "zero")])),
    ("mean", ["--ablate", "L0H1:mean"], dict(ablate=[(0, 1, "mean")])),
    ("several", ["--ablate", "L0H0,L2H1:mean,L1H3"], dict(ablate=[(0, 0, "zero"), (2, 1, "mean"), (1, 3, "zero")])),
    ("layer", ["--ablate", "L1H*"], dict(ablate=[(1, None, "zero")])),
    ("layer-mean", ["--ablate", "L0H*:mean"], dict(ablate=[(0, None, "mean")])),
    ("knockout-head", ["--knockout", "L1H0:5-2"], dict(knockout=[(1, 0, 5, 2)])),
    ("knockout-all", ["--knockout", "L0H*:4-0,L2H3:6-6"], dict(knockout=[(0, None, 4, 0), (2, 3, 6, 6)])),
    ("composed", ["--ablate", "L0H2:mean", "--knockout", "L1H*:7-1,L1H1:7-3"],
     dict(ablate=[(0, 2, "mean")], knockout=[(1, None, 7, 1), (1, 1, 7, 3)])),
]
IDS = [3, 17, 42, 8, 8, 55, 21, 3, 90, 12]


def attnscope(*args):
    return subprocess.run([ref.BIN, *args], capture_output=True, text=True, timeout=300)


def folder_of(family, opts):
    folder = ref.case_dir("interventions", family)
    cfg, tensors = hf.make_model(family, **opts)
    return folder, cfg, hf.write_folder(folder, cfg, tensors)


class Interventions(unittest.TestCase):
    def test_ablation_and_knockout_match_reference(self):
        for family, opts in FAMILIES:
            folder, cfg, stored = folder_of(family, opts)
            for name, flags, hooks in CASES:
                with self.subTest(family=family, case=name):
                    out = os.path.join(folder + "-out", name)
                    result = attnscope("model", "run", folder, "--ids", ",".join(map(str, IDS)), *flags, "--out", out)
                    self.assertEqual(result.returncode, 0, result.stderr)
                    self.assertIn("intervened", result.stdout)
                    logits, attns = hf.forward(cfg, stored, IDS, hooks=hf.Hooks(**hooks))
                    got = np.load(os.path.join(out, "attentions.npy"))[:, 0]
                    np.testing.assert_allclose(got, torch.stack(attns).numpy(), atol=MAP_TOL, rtol=0)
                    for (layer, head, q, k) in hooks.get("knockout", []):
                        for h in range(got.shape[1]) if head is None else [head]:
                            self.assertEqual(got[layer, h, q, k], 0.0)  # exactly
                            self.assertAlmostEqual(float(got[layer, h, q].sum()), 1.0, places=5)
                    if logits is not None:
                        np.testing.assert_allclose(np.load(os.path.join(out, "logits.npy")), logits.numpy(),
                                                   atol=LOGIT_TOL, rtol=0)

    def test_ablation_changes_the_predictions(self):
        """The intervention reaches the output: the reference itself moves by more than the tolerance."""
        folder, cfg, stored = folder_of("gpt2", dict(seed=71, N=3))
        plain, _ = hf.forward(cfg, stored, IDS)
        ablated, _ = hf.forward(cfg, stored, IDS, hooks=hf.Hooks(ablate=[(1, None, "zero")]))
        self.assertGreater(float((plain - ablated).abs().max()), 50 * LOGIT_TOL)

    def test_lens_and_generate_follow_the_intervention(self):
        folder, cfg, stored = folder_of("llama", dict(seed=72, G=2, N=3))
        out = os.path.join(folder + "-out", "lens")
        result = attnscope("model", "run", folder, "--ids", ",".join(map(str, IDS)), "--ablate", "L1H*:mean",
                           "--lens", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        residuals = []
        hf.forward(cfg, stored, IDS, residuals, hooks=hf.Hooks(ablate=[(1, None, "mean")]))
        probs = np.stack([torch.softmax(hf.output_head(cfg, stored, x), -1).numpy() for x in residuals])
        top = np.load(os.path.join(out, "lens_probs.npy"))
        np.testing.assert_allclose(top[..., 0], probs.max(-1), atol=LOGIT_TOL, rtol=0)
        gen = os.path.join(folder + "-out", "gen")
        result = attnscope("model", "generate", folder, "--ids", "3,17,42", "--tokens", "4", "--ablate", "L1H*:mean",
                           "--knockout", "L2H0:4-1", "--out", gen)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(os.path.join(gen, "tokens.txt"), encoding="utf-8") as f:
            ids = [int(line.split("\t")[1]) for line in f.read().splitlines()]
        for n in range(3, len(ids)):  # each generated token: the intervened model's argmax after its prefix
            knockout = [(2, 0, 4, 1)] if n > 4 else []  # the knockout applies once position 4 exists
            logits, _ = hf.forward(cfg, stored, ids[:n], hooks=hf.Hooks(ablate=[(1, None, "mean")], knockout=knockout))
            self.assertEqual(int(torch.argmax(logits[-1])), ids[n])


def reference_patching(cfg, stored, clean, corrupt, answer, wrong):
    """TransformerLens' patching: per head (z at every position) and per layer and position
    (resid_pre), the metric of the corrupt run with the clean activation."""
    def metric(logits):
        return float(logits[-1, answer] - logits[-1, wrong])
    seen = hf.Hooks()
    clean_logits, _ = hf.forward(cfg, stored, clean, hooks=seen)
    corrupt_logits, _ = hf.forward(cfg, stored, corrupt)
    N, H = len(seen.z_seen), seen.z_seen[0].shape[0]
    heads = np.zeros((N, H))
    resid = np.zeros((N, len(clean)))
    for layer in range(N):
        for h in range(H):
            logits, _ = hf.forward(cfg, stored, corrupt, hooks=hf.Hooks(z={(layer, h): seen.z_seen[layer][h]}))
            heads[layer, h] = metric(logits)
        for p in range(len(clean)):
            logits, _ = hf.forward(cfg, stored, corrupt, hooks=hf.Hooks(resid={(layer, p): seen.resid_seen[layer][p]}))
            resid[layer, p] = metric(logits)
    return metric(clean_logits), metric(corrupt_logits), heads, resid


class Patching(unittest.TestCase):
    CLEAN = [5, 30, 61, 7, 30, 61, 14, 9]
    CORRUPT = [5, 30, 61, 7, 44, 61, 14, 9]

    def test_tables_match_reference(self):
        for family, opts in FAMILIES:
            with self.subTest(family=family):
                folder, cfg, stored = folder_of(family, opts)
                out = os.path.join(folder + "-out", "patch")
                result = attnscope("model", "patch", folder, "--clean-ids", ",".join(map(str, self.CLEAN)),
                                   "--corrupt-ids", ",".join(map(str, self.CORRUPT)), "--answer-id", "61",
                                   "--wrong-id", "44", "--out", out, "--json")
                self.assertEqual(result.returncode, 0, result.stderr)
                clean, corrupt, heads, resid = reference_patching(cfg, stored, self.CLEAN, self.CORRUPT, 61, 44)
                got_heads = np.load(os.path.join(out, "patch_heads.npy"))
                got_resid = np.load(os.path.join(out, "patch_resid.npy"))
                self.assertEqual(got_heads.dtype, np.float32)
                self.assertEqual(got_resid.shape, (cfg.get("num_hidden_layers", cfg.get("n_layer")), len(self.CLEAN)))
                np.testing.assert_allclose(got_heads, heads, atol=LOGIT_TOL, rtol=0)
                np.testing.assert_allclose(got_resid, resid, atol=LOGIT_TOL, rtol=0)
                with open(os.path.join(out, "patch.json")) as f:
                    meta = json.load(f)
                self.assertEqual(json.loads(result.stdout), meta)
                self.assertAlmostEqual(meta["clean_metric"], clean, delta=LOGIT_TOL)
                self.assertAlmostEqual(meta["corrupt_metric"], corrupt, delta=LOGIT_TOL)
                self.assertEqual((meta["answer_id"], meta["wrong_id"]), (61, 44))
                want = (heads - corrupt) / (clean - corrupt)
                np.testing.assert_allclose(np.array(meta["patch_heads_normalised"]), want, atol=1e-2, rtol=1e-3)
                # Patching the whole residual stream at layer 0 restores the clean run at the changed position.
                self.assertAlmostEqual(meta["patch_resid_normalised"][0][4], 1.0, delta=1e-3)

    def test_equal_runs_give_null_tables(self):
        folder, cfg, stored = folder_of("gpt2", dict(seed=71, N=2))
        out = os.path.join(folder + "-out", "same")
        ids = ",".join(map(str, self.CLEAN))
        result = attnscope("model", "patch", folder, "--clean-ids", ids, "--corrupt-ids", ids, "--answer-id", "1",
                           "--wrong-id", "2", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(os.path.join(out, "patch.json")) as f:
            meta = json.load(f)
        self.assertEqual(meta["clean_metric"], meta["corrupt_metric"])
        self.assertTrue(all(v is None for row in meta["patch_heads_normalised"] for v in row))
        self.assertTrue(all(v is None for row in meta["patch_resid_normalised"] for v in row))

    def test_answer_by_text_on_a_shipped_model(self):
        model = os.path.join(ref.SHIPPED, "python-code")
        out = os.path.join(ref.case_dir("interventions", "text-answer"), "out")
        result = attnscope("model", "patch", model, "--clean", "a = b; a", "--corrupt", "c = b; a", "--answer", " ",
                           "--wrong", "=", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(os.path.join(out, "patch.json")) as f:
            meta = json.load(f)
        self.assertEqual(meta["tokens"], 8)
        self.assertEqual(len(meta["patch_resid_normalised"][0]), 8)


class BadInput(unittest.TestCase):
    def setUp(self):
        self.folder, _, _ = folder_of("gpt2", dict(seed=71, N=3))
        self.out = os.path.join(self.folder + "-out", "never")

    def expect(self, args, message):
        result = attnscope(*args)
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
        self.assertIn(message, result.stderr)
        self.assertFalse(os.path.exists(self.out))

    def run_with(self, *flags):
        return ["model", "run", self.folder, "--ids", "1,2,3,4", *flags, "--out", self.out]

    def test_spec_errors_name_the_item(self):
        self.expect(self.run_with("--ablate", "L1H0,L9H2"), '--ablate: "L9H2": the model has 3 layers')
        self.expect(self.run_with("--ablate", "L1H7"), '--ablate: "L1H7": the model has 4 heads per layer')
        self.expect(self.run_with("--ablate", "L1H0:max"), '--ablate: "L1H0:max": not LAYER HEAD')
        self.expect(self.run_with("--ablate", "L1H0,"), '--ablate: "": not LAYER HEAD')
        self.expect(self.run_with("--knockout", "L1H0:2"), '--knockout: "L1H0:2": not LAYER HEAD:QUERY-KEY')
        self.expect(self.run_with("--knockout", "L1H0:9-2"), '--knockout: "L1H0:9-2": position 9 is past the text\'s 4 tokens')
        self.expect(self.run_with("--knockout", "L1H*:1-3"), '--knockout: "L1H*:1-3": key 3 is after query 1')
        self.expect(["model", "generate", self.folder, "--ids", "1,2", "--tokens", "2", "--ablate", "L3H0",
                     "--out", self.out], '--ablate: "L3H0": the model has 3 layers')
        self.expect(["export", self.folder, "--text", "ab", "--knockout", "L0H0:0-1", "--out", self.out],
                    "key 1 is after query 0")

    def patch(self, *flags):
        base = {"--clean-ids": "1,2,3", "--corrupt-ids": "1,5,3", "--answer-id": "4", "--wrong-id": "6"}
        args = dict(base)
        args.update(dict(zip(flags[::2], flags[1::2])))
        return ["model", "patch", self.folder] + [x for kv in args.items() for x in kv] + ["--out", self.out]

    def test_patch_errors(self):
        self.expect(self.patch("--corrupt-ids", "1,5"), "the clean text has 3 tokens but the corrupt one has 2")
        self.expect(self.patch("--answer-id", "97"), "--answer-id: token id 97 is outside the vocabulary")
        self.expect(self.patch("--clean-ids", "1,200,3"), "token id 200 is outside the vocabulary")
        self.expect(self.patch("--wrong-id", "-1"), "--wrong-id")
        model = os.path.join(ref.SHIPPED, "python-code")
        self.expect(["model", "patch", model, "--clean", "a=1", "--corrupt", "b=1", "--answer", "ab", "--wrong", "c",
                     "--out", self.out], '--answer "ab": it is 2 tokens')


class ExportAndAnalyze(unittest.TestCase):
    def test_export_and_analyze_follow_the_intervention(self):
        folder, cfg, stored = folder_of("llama", dict(seed=72, G=2, N=3, V=256, P=24))
        hf.write_byte_level_bpe(folder)
        out = ref.fresh(os.path.join(folder + "-out", "export"))  # an export adds files beside an earlier run's
        run = attnscope("model", "run", folder, "--text", "abcabcab", "--out", out + "-run", "--knockout", "L1H*:6-3")
        self.assertEqual(run.returncode, 0, run.stderr)
        result = attnscope("export", folder, "--text", "abcabcab", "--knockout", "L1H*:6-3", "--what", "probs",
                           "--format", "npy", "--layers", "1", "--heads", "all", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        want = np.load(os.path.join(out + "-run", "attentions.npy"))[1, 0]
        files = sorted(f for f in os.listdir(out) if f.endswith(".npy"))
        self.assertEqual(len(files), want.shape[0])
        for h, name in enumerate(files):
            np.testing.assert_allclose(np.load(os.path.join(out, name)).reshape(want[h].shape), want[h], atol=1e-6)
            self.assertEqual(want[h][6, 3], 0.0)
        settings = [f for f in os.listdir(out) if f.endswith(".json")]
        with open(os.path.join(out, settings[0])) as f:
            self.assertEqual(json.load(f)["model_knockout"], "L1H*:6-3")
        analyzed = attnscope("analyze", folder, "--text", "abcabcab", "--ablate", "L0H1", "--json")
        self.assertEqual(analyzed.returncode, 0, analyzed.stderr)
        plain = attnscope("analyze", folder, "--text", "abcabcab", "--json")
        rows = {(r["layer"], r["head"]): r for r in json.loads(analyzed.stdout)}
        before = {(r["layer"], r["head"]): r for r in json.loads(plain.stdout)}
        self.assertEqual(rows[(0, 1)]["entropy_bits"], before[(0, 1)]["entropy_bits"])  # its own map unchanged
        self.assertNotEqual(rows[(1, 0)]["entropy_bits"], before[(1, 0)]["entropy_bits"])  # later layers see it

    def test_captions_name_the_interventions(self):
        """Every export's caption names the run's interventions: the figures' subtitle (PNG, SVG
        and PDF draw the same one), an ablated head's grid tile title, the HTML page's caption
        and the settings JSON beside the files."""
        model = os.path.join(ref.SHIPPED, "python-code")
        out = ref.fresh(os.path.join(ref.case_dir("interventions", "captions"), "out"))
        result = attnscope("export", model, "--text", "def f(x): return f(x)", "--ablate", "L0H1", "--knockout",
                           "L1H3:5-2", "--what", "probs,grid", "--format", "svg,html", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        named = "ablate L0H1; knockout L1H3:5-2"
        files = sorted(os.listdir(out))
        svgs = [f for f in files if f.endswith(".svg")]
        self.assertTrue(any("grid" in f for f in svgs), files)
        for name in svgs:
            with open(os.path.join(out, name)) as f:
                svg = f.read()
            self.assertIn(named, svg, name)
            if "grid" in name:
                self.assertIn("H1 ablated", svg)
                self.assertEqual(svg.count(" ablated"), 1)
        pages = [f for f in files if f.endswith(".html")]
        self.assertEqual(len(pages), 1, files)
        with open(os.path.join(out, pages[0])) as f:
            self.assertIn('"interventions":"%s"' % named, f.read())
        settings = [f for f in files if f.endswith(".json")]
        with open(os.path.join(out, settings[0])) as f:
            saved = json.load(f)
        self.assertEqual((saved["model_ablate"], saved["model_knockout"]), ("L0H1", "L1H3:5-2"))


if __name__ == "__main__":
    unittest.main()
