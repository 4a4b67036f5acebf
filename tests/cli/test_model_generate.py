"""`attnscope model generate` (docs/generation-and-lens.md, "attnscope model generate") and the runners' KV cache
(attention/cached_rows.h), against independent float64 references: model_reference.py for
the shipped attnscope-model/1 folders, hf_reference.py for one random Hugging Face folder per
causal family (GQA, MQA-free llama; mistral's sliding window; gemma2's sliding layers).

- greedy decoding: 20 steps equal the reference's greedy tokens (a step whose reference top
  two logits lie within GAP_TOL of each other ends the comparison: float32 may pick either);
- rows: attentions.npy (each row as the step that first computed it) equals the reference's
  full forward over the final sequence within 1e-5;
- steps.json: prob and rank agree with the reference logits; fixed-seed sampling repeats;
- incremental runs (append, insert in the middle, delete, replace) equal fresh runs bit for
  bit (attnscope_incremental), and compute only from the first changed token on;
- bad input: one line, exit 2 for usage and 1 for input, nothing written.
"""
import json
import os
import subprocess
import unittest

import numpy as np
import torch

import hf_reference as hf
import model_reference as ref

ATTN_TOL = 1e-5
PROB_TOL = 1e-4
GAP_TOL = 1e-3
STEPS = 20
INCREMENTAL_BIN = os.environ.get("ATTNSCOPE_INCREMENTAL_BIN", "")

# name, family, make_model options (context P = 160: the sequences cross a 64-row block)
FAMILIES = [
    ("gpt2", "gpt2", dict(seed=41)),
    ("llama-gqa", "llama", dict(seed=42, G=2)),
    ("mistral-window5", "mistral", dict(seed=43, G=2, window=5)),
    ("qwen2", "qwen2", dict(seed=44, G=2)),
    ("qwen3-qk-norm", "qwen3", dict(seed=47, G=2, head_dim=16)),
    ("gemma2-sliding", "gemma2", dict(seed=45, G=2, window=4, N=3)),
    ("gpt-neox", "gpt_neox", dict(seed=46, rotary=0.5)),
]
PROMPT = [3, 14, 15, 9, 2, 6]


def generate(folder, out, *args):
    return subprocess.run([ref.BIN, "model", "generate", folder, *args, "--out", out], capture_output=True,
                          text=True, timeout=120)


def reference_greedy(forward, prompt, steps):
    """Greedy ids after the prompt, cut at the first near-tie of the top two logits."""
    ids = list(prompt)
    for _ in range(steps):
        logits = torch.as_tensor(forward(ids)[-1])
        top2 = torch.topk(logits, 2).values
        nxt = int(torch.argmax(logits))
        ids.append(nxt)
        if float(top2[0] - top2[1]) < GAP_TOL:
            return ids, True
    return ids, False


def read_outputs(out):
    with open(os.path.join(out, "steps.json"), encoding="utf-8") as f:
        steps = json.load(f)
    with open(os.path.join(out, "tokens.txt"), encoding="utf-8") as f:
        lines = f.read().split("\n")[:-1]
    return steps, lines, np.load(os.path.join(out, "attentions.npy"))


class GenerateHf(unittest.TestCase):
    def check_steps(self, steps, logits_of, prompt_len):
        for n, step in enumerate(steps):
            self.assertEqual(sorted(step), ["id", "ms", "position", "prob", "rank", "tok" + "en", "top"])
            self.assertEqual(step["position"], prompt_len + n)
            logits = torch.as_tensor(logits_of(step["position"]))  # the reference's scores after position - 1
            p = torch.softmax(logits, -1).numpy()
            self.assertAlmostEqual(step["prob"], p[step["id"]], delta=PROB_TOL)
            self.assertGreaterEqual(step["rank"], 1 + int(np.sum(p > p[step["id"]] + PROB_TOL)))
            self.assertLessEqual(step["rank"], 1 + int(np.sum(p > p[step["id"]] - PROB_TOL)))
            self.assertEqual(len(step["top"]), 5)
            for (tid, _, prob), want in zip(step["top"], np.sort(p)[::-1][:5]):
                self.assertAlmostEqual(prob, want, delta=PROB_TOL)
                self.assertAlmostEqual(p[tid], prob, delta=PROB_TOL)
            self.assertGreaterEqual(step["ms"], 0.0)

    def test_greedy_rows_and_steps_match_reference(self):
        for name, family, opts in FAMILIES:
            with self.subTest(model=name):
                folder = ref.case_dir("gen", name)
                cfg, tensors = hf.make_model(family, P=160, **opts)
                stored = hf.write_folder(folder, cfg, tensors)
                out = folder + "-out"
                result = generate(folder, out, "--ids", ",".join(map(str, PROMPT)), "--tokens", str(STEPS), "--greedy")
                self.assertEqual(result.returncode, 0, result.stderr)
                steps, lines, attn = read_outputs(out)
                got = PROMPT + [s["id"] for s in steps]
                want, tie = reference_greedy(lambda ids: hf.forward(cfg, stored, ids)[0], PROMPT, STEPS)
                self.assertEqual(got[:len(want)], want)
                if not tie:
                    self.assertEqual(len(got), len(PROMPT) + STEPS)
                logits, attns = hf.forward(cfg, stored, got)
                np.testing.assert_allclose(attn, torch.stack(attns).unsqueeze(1).numpy(), atol=ATTN_TOL, rtol=0)
                self.check_steps(steps, lambda position: logits[position - 1], len(PROMPT))
                self.assertEqual(len(lines), len(got))
                for t, line in enumerate(lines):
                    cols = line.split("\t")
                    self.assertEqual((int(cols[0]), int(cols[1])), (t, got[t]))
                    self.assertEqual(cols[4:], ["generated"] if t >= len(PROMPT) else [])

    def test_sampling_repeats_with_a_seed(self):
        folder = ref.case_dir("gen", "sampling")
        cfg, tensors = hf.make_model("llama", P=160, seed=47, G=2)
        stored = hf.write_folder(folder, cfg, tensors)
        runs = []
        for n, seed in enumerate(["7", "7", "8"]):
            out = os.path.join(folder + "-out", str(n))
            result = generate(folder, out, "--ids", "1,2,3", "--tokens", "12", "--temperature", "1.5", "--top-k", "40",
                              "--top-p", "0.95", "--seed", seed)
            self.assertEqual(result.returncode, 0, result.stderr)
            runs.append(read_outputs(out)[0])
        ids = [[s["id"] for s in steps] for steps in runs]
        self.assertEqual(ids[0], ids[1])
        self.assertNotEqual(ids[0], ids[2])
        logits, _ = hf.forward(cfg, stored, [1, 2, 3] + ids[0])
        self.check_steps(runs[0], lambda position: logits[position - 1], 3)
        self.assertTrue(any(s["rank"] > 1 for steps in runs for s in steps), "sampling never left the top token")

    def test_stops_at_the_context_and_at_eos(self):
        folder = ref.case_dir("gen", "stops")
        cfg, tensors = hf.make_model("gpt2", P=10, seed=48)
        stored = hf.write_folder(folder, cfg, tensors)
        result = generate(folder, folder + "-out", "--ids", "1,2,3", "--tokens", "50")
        self.assertEqual(result.returncode, 0, result.stderr)
        steps, lines, attn = read_outputs(folder + "-out")
        self.assertEqual((len(steps), len(lines), attn.shape[-1]), (7, 10, 10))
        self.assertIn("stopped at context", result.stdout)
        first = steps[0]["id"]  # make the first greedy token the end of sequence
        with open(os.path.join(folder, "config.json")) as f:
            config = json.load(f)
        config["eos_token_id"] = [9999, first]
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(config, f)
        result = generate(folder, folder + "-eos", "--ids", "1,2,3", "--tokens", "50")
        self.assertEqual(result.returncode, 0, result.stderr)
        steps, lines, attn = read_outputs(folder + "-eos")
        self.assertEqual(([s["id"] for s in steps], attn.shape[-1]), ([first], 4))
        self.assertIn("stopped at eos", result.stdout)


SHIPPED_PROMPT = "def add(a, b):\n"


def generate_shipped(test, case, cache=None):
    """`model generate` of python-code after SHIPPED_PROMPT, STEPS greedy tokens (cache = (W, k):
    --window W --sinks k), its ids checked against the reference's greedy ids. Returns (model,
    prompt ids, all ids, steps, attentions, output folder, result)."""
    folder = os.path.join(ref.SHIPPED, "python-code")
    model = ref.FolderModel(folder)
    prompt, _ = model.encode(SHIPPED_PROMPT)
    out = ref.case_dir("gen", case) + "/out"
    args = ["--window", str(cache[0]), "--sinks", str(cache[1])] if cache else []
    result = generate(folder, out, "--text", SHIPPED_PROMPT, "--tokens", str(STEPS), *args)
    test.assertEqual(result.returncode, 0, result.stderr)
    steps, _, attn = read_outputs(out)
    got = prompt + [s["id"] for s in steps]
    want, _ = reference_greedy(lambda ids: ref.forward(model, ids, cache=cache)[0], prompt, STEPS)
    test.assertEqual(got[:len(want)], want)
    return model, prompt, got, steps, attn, out, result


class GenerateShipped(unittest.TestCase):
    def test_greedy_matches_reference(self):
        model, prompt, got, _, attn, out, result = generate_shipped(self, "shipped")
        _, attns = ref.forward(model, got)
        np.testing.assert_allclose(attn, np.stack([np.asarray(a) for a in attns])[:, None], atol=ATTN_TOL, rtol=0)
        with open(os.path.join(out, "generated.txt"), encoding="utf-8") as f:
            self.assertEqual(f.read(), "".join(model.vocab[i] for i in got[len(prompt):]))
        self.assertIn(SHIPPED_PROMPT, result.stdout)


    def test_lens_over_the_final_sequence_equals_model_run(self):
        """`generate --lens` writes the lens of the final sequence: the same files `model run
        --lens` writes for the prompt plus the generated text."""
        folder = os.path.join(ref.SHIPPED, "python-code")
        base = ref.case_dir("gen", "lens")
        result = generate(folder, base + "/gen", "--text", "def f(x):", "--tokens", "6", "--lens")
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(os.path.join(base, "gen", "generated.txt"), encoding="utf-8") as f:
            text = "def f(x):" + f.read()
        run = subprocess.run([ref.BIN, "model", "run", folder, "--text", text, "--lens", "--out", base + "/run"],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 0, run.stderr)
        for name, dtype in (("lens_ids.npy", np.int64), ("lens_probs.npy", np.float32)):
            got, want = np.load(os.path.join(base, "gen", name)), np.load(os.path.join(base, "run", name))
            self.assertEqual(got.dtype, dtype)
            self.assertEqual(got.shape, (3, len(text), 5))
            np.testing.assert_array_equal(got, want)

# name, family, make_model options, (W, k) of --window W --sinks k. mistral's own window (4 keys
# back) is narrower than W; gemma2's sliding layers (3 back) too, its global layers take W.
CACHE_FAMILIES = [
    ("llama-gqa", "llama", dict(seed=42, G=2), (6, 2)),
    ("mistral-window5", "mistral", dict(seed=43, G=2, window=5), (8, 2)),
    ("mistral-window9", "mistral", dict(seed=51, G=2, window=9), (3, 1)),
    ("gemma2-sliding", "gemma2", dict(seed=45, G=2, window=4, N=3), (5, 1)),
    ("gpt2", "gpt2", dict(seed=41), (7, 0)),
]


class GenerateCacheWindow(unittest.TestCase):
    """--window W --sinks k: every row (the prompt's and each generated one, as computed through
    the cache) equals the reference's full forward under sinks + causal window within 1e-5, and
    greedy decoding follows that reference; the maps differ from the unwindowed model's."""

    def check(self, attn, steps, reference, prompt_len):
        """reference: the windowed forward's (logits, attentions) over the final sequence."""
        logits, attns = reference
        want = np.stack([np.asarray(a) for a in attns])[:, None]
        np.testing.assert_allclose(attn, want, atol=ATTN_TOL, rtol=0)
        GenerateHf.check_steps(self, steps, lambda position: logits[position - 1], prompt_len)

    def test_hf_families_match_the_windowed_reference(self):
        for name, family, opts, (W, k) in CACHE_FAMILIES:
            with self.subTest(model=name):
                folder = ref.case_dir("gen-cache", name)
                cfg, tensors = hf.make_model(family, P=160, **opts)
                stored = hf.write_folder(folder, cfg, tensors)
                out = folder + "-out"
                args = ["--ids", ",".join(map(str, PROMPT)), "--tokens", str(STEPS), "--greedy", "--window", str(W)]
                result = generate(folder, out, *args, *(["--sinks", str(k)] if k else []))
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertIn("cache: %d sinks + window %d (%d entries per layer" % (k, W, k + W), result.stdout)
                steps, _, attn = read_outputs(out)
                got = PROMPT + [s["id"] for s in steps]
                forward = lambda ids: hf.forward(cfg, stored, ids, cache=(W, k))
                want, _ = reference_greedy(lambda ids: forward(ids)[0], PROMPT, STEPS)
                self.assertEqual(got[:len(want)], want)
                self.check(attn, steps, forward(got), len(PROMPT))
                unwindowed = torch.stack(hf.forward(cfg, stored, got)[1]).unsqueeze(1).numpy()
                self.assertGreater(np.abs(attn - unwindowed).max(), 1e-2)  # the window changed the maps

    def test_shipped_model_matches_the_windowed_reference(self):
        model, prompt, got, steps, attn, _, _ = generate_shipped(self, "shipped-cache", (8, 2))
        self.check(attn, steps, ref.forward(model, got, cache=(8, 2)), len(prompt))
        # The window is a mask over the same cached rows: rows whose keys all lie within it equal
        # the plain causal rows exactly as the stepper says; the later ones differ.
        plain = np.stack([np.asarray(a) for a in ref.forward(model, got)[1]])[:, None]
        np.testing.assert_allclose(attn[..., :9, :], plain[..., :9, :], atol=ATTN_TOL, rtol=0)
        self.assertGreater(np.abs(attn - plain).max(), 1e-2)


def edits(base, rng, V):
    """append, append across a block, insert in the middle, delete, replace everything."""
    seqs = [base]
    seqs.append(seqs[-1] + [int(rng.integers(V))])
    seqs.append(seqs[-1] + list(map(int, rng.integers(0, V, 70))))       # crosses 64 and 128
    seqs.append(seqs[-1][:40] + [int(rng.integers(V))] + seqs[-1][40:])  # insert in the middle
    seqs.append(seqs[-1][:100] + seqs[-1][101:])                         # delete
    seqs.append(seqs[-1][:90])                                           # delete the tail
    seqs.append(list(map(int, rng.integers(0, V, 77))))                  # replace everything
    return seqs


def first_change(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


class Incremental(unittest.TestCase):
    def check(self, folder, seqs):
        path = folder + "-inputs.json"
        with open(path, "w", encoding="utf-8") as f:
            json.dump(seqs, f)
        result = subprocess.run([INCREMENTAL_BIN, folder, path], capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        rows = json.loads(result.stdout)
        for n, (row, seq) in enumerate(zip(rows, seqs)):
            self.assertTrue(row["identical"], "input %d differs from a fresh run" % n)
            changed = 0 if n == 0 else first_change(seqs[n - 1], seq)
            self.assertEqual(row["first_computed"], changed, "input %d" % n)

    def test_every_causal_family_equals_fresh_runs(self):
        for name, family, opts in FAMILIES:
            with self.subTest(model=name):
                folder = ref.case_dir("gen-inc", name)
                cfg, tensors = hf.make_model(family, P=160, **opts)
                hf.write_folder(folder, cfg, tensors)
                rng = np.random.default_rng(len(name))
                self.check(folder, edits(list(map(int, rng.integers(0, cfg["vocab_size"], 50))), rng, cfg["vocab_size"]))

    def test_shipped_model_text_edits(self):
        folder = os.path.join(ref.SHIPPED, "python-code")
        texts = ["def f(x):\n    return x", "def f(x):\n    return x + 1", "def g(x):\n    return x + 1",
                 "def g(x):\n    return x + 1" * 4, "def g(x):\n    return x", "while True:\n    pass"]
        model = ref.FolderModel(folder)
        path = ref.case_dir("gen-inc", "shipped") + "/inputs.json"
        with open(path, "w", encoding="utf-8") as f:
            json.dump(texts, f)
        result = subprocess.run([INCREMENTAL_BIN, folder, path], capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        for n, row in enumerate(json.loads(result.stdout)):
            self.assertTrue(row["identical"], texts[n])
            changed = 0 if n == 0 else first_change(model.encode(texts[n - 1])[0], model.encode(texts[n])[0])
            self.assertEqual(row["first_computed"], changed, texts[n])


def bench_folder(name, family, seed, P=160, **opt):
    """A random folder of one family for the bench tests."""
    folder = ref.case_dir("gen", name)
    cfg, tensors = hf.make_model(family, P=P, seed=seed, **opt)
    hf.write_folder(folder, cfg, tensors)
    return folder


def bench_model(folder, *args):
    """attnscope bench --model FOLDER ARGS..."""
    return subprocess.run([ref.BIN, "bench", "--model", folder, *args], capture_output=True, text=True, timeout=120)


class BenchModel(unittest.TestCase):
    def test_json_fields(self):
        folder = bench_folder("bench", "llama", 50, G=2)
        result = bench_model(folder, "--tokens", "20,70", "--generate", "3", "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        rows = json.loads(result.stdout)
        self.assertEqual([r["L"] for r in rows], [20, 70])
        for r in rows:
            self.assertEqual(list(r), ["model", "L", "load_ms", "forward_ms", "append_ms", "generated", "step_ms",
                                       "peak_rss_mb"])
            self.assertEqual(r["generated"], 3)
            self.assertTrue(all(r[k] >= 0 for k in ["load_ms", "forward_ms", "append_ms", "step_ms"]))
            self.assertGreater(r["peak_rss_mb"], 0)
        result = bench_model(folder, "--tokens", "200")
        self.assertEqual(result.returncode, 1)
        self.assertIn("context is 160", result.stderr)

    def test_typing_fields(self):
        """--typing N: N tokens appended one by one after a run on L (the app's typing at the end)."""
        folder = bench_folder("bench-typing", "gpt2", 51)
        result = bench_model(folder, "--tokens", "20,70", "--typing", "4", "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        for r in json.loads(result.stdout):
            self.assertEqual(list(r), ["model", "L", "load_ms", "forward_ms", "append_ms", "typed", "typing_median_ms",
                                       "typing_max_ms", "peak_rss_mb"])
            self.assertEqual(r["typed"], 4)
            self.assertTrue(0 <= r["typing_median_ms"] <= r["typing_max_ms"])
        result = bench_model(folder, "--tokens", "20", "--typing", "4")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("typing_ms (median / max)", result.stdout)
        for args, code, message in [(["--typing", "0"], 2, "--typing must be at least 1"),
                                    (["--tokens", "158", "--typing", "5"], 1, "--tokens 158 + --typing 5: ")]:
            result = bench_model(folder, *args)
            self.assertEqual(result.returncode, code, result.stderr)
            self.assertIn(message, result.stderr)
            self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)

    def test_rerun_fields(self):
        """--rerun N: N more full forwards, each on another text of length L (every row computed)."""
        folder = bench_folder("bench-rerun", "gpt2", 52)
        result = bench_model(folder, "--tokens", "30", "--rerun", "2", "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        (r,) = json.loads(result.stdout)
        self.assertEqual(list(r), ["model", "L", "load_ms", "forward_ms", "append_ms", "reruns", "rerun_ms",
                                   "peak_rss_mb"])
        self.assertEqual(r["reruns"], 2)
        self.assertGreater(r["rerun_ms"], 0)
        result = bench_model(folder, "--tokens", "30", "--rerun", "0")
        self.assertEqual(result.returncode, 2)
        self.assertIn("--rerun must be at least 1", result.stderr)

    def test_model_vs_torch_script_prints_first_and_median_runs(self):
        """scripts/bench_model_vs_torch.py on a small folder: both programs' first forward and
        the median after it, with their ratios."""
        folder = bench_folder("bench-vs-torch", "gpt2", 53, P=64)
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                              "bench_model_vs_torch.py")
        env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
        result = subprocess.run(["/usr/bin/python3", script, folder, "--bin", ref.BIN, "--tokens", "16,24",
                                 "--repeat", "1", "--threads", "1"], capture_output=True, text=True, timeout=300,
                                env=env)
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = result.stdout.strip().splitlines()
        self.assertIn("torch with GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4294967296", lines[0])
        self.assertIn("attnscope with (unset: glibc's defaults)", lines[0])
        self.assertEqual(lines[1].split(), ["L", "torch_first", "ours_first", "ratio", "torch_ms", "attnscope_ms",
                                            "ratio", "append_ms"])
        for line, L in zip(lines[2:], [16, 24]):
            cells = line.split()
            self.assertEqual(int(cells[0]), L)
            for t, o, ratio in [(cells[1], cells[2], cells[3]), (cells[4], cells[5], cells[6])]:
                t, o, ratio = float(t), float(o), float(ratio.rstrip("x"))
                self.assertGreater(o, 0)
                # The times are printed to 0.1 ms, the ratio from the unrounded times to 0.01.
                self.assertLessEqual((t - 0.05) / (o + 0.05) - 0.005, ratio, line)
                self.assertLessEqual(ratio, (t + 0.05) / max(o - 0.05, 1e-9) + 0.005, line)
        self.assertEqual(len(lines), 4)


class GenerateBadInput(unittest.TestCase):
    def setUp(self):
        self.folder = ref.case_dir("gen", "bad")
        cfg, tensors = hf.make_model("gpt2", P=8, seed=49)
        hf.write_folder(self.folder, cfg, tensors)

    def expect(self, code, message, *args):
        out = os.path.join(self.folder + "-out", "new")
        result = generate(self.folder, out, *args)
        self.assertEqual(result.returncode, code, result.stderr)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
        self.assertIn(message, result.stderr)
        self.assertFalse(os.path.exists(out))

    def test_usage_errors(self):
        self.expect(2, "--tokens must be at least 1", "--ids", "1,2", "--tokens", "0")
        self.expect(2, "--temperature must be > 0", "--ids", "1,2", "--tokens", "3", "--temperature", "-1")
        self.expect(2, "--top-p must be in (0, 1]", "--ids", "1,2", "--tokens", "3", "--top-p", "0")
        self.expect(2, "--top-p must be in (0, 1]", "--ids", "1,2", "--tokens", "3", "--top-p", "1.5")
        self.expect(2, "--greedy takes no", "--ids", "1,2", "--tokens", "3", "--greedy", "--seed", "1")
        self.expect(2, "--sinks needs --window", "--ids", "1,2", "--tokens", "3", "--sinks", "2")
        self.expect(2, "--window must be >= 0", "--ids", "1,2", "--tokens", "3", "--window", "-1")
        self.expect(2, "--sinks must be >= 0", "--ids", "1,2", "--tokens", "3", "--window", "4", "--sinks", "-2")

    def test_prompt_at_the_context(self):
        self.expect(1, "no room to generate", "--ids", "1,2,3,4,5,6,7,8", "--tokens", "3")


if __name__ == "__main__":
    unittest.main()
