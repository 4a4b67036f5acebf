"""`attnscope model generate` (docs/generation-and-lens.md, "attnscope model generate") and the runners' KV cache
(attention/cached_rows.h), against independent float64 references: model_reference.py for
the shipped attnscope-model/1 folders, hf_reference.py for one random Hugging Face folder per
causal family (GQA, MQA-free llama; mistral's sliding window; gemma2's sliding layers).

- greedy decoding: 20 steps equal the reference's greedy tokens (a step whose reference top
  two logits lie within GAP_TOL of each other ends the comparison: float32 may pick either);
- rows: attentions.npy (each row as the step that first computed it) equals the reference's
  full forward over the final sequence within 1e-5;
- steps.json: prob and rank agree with the reference logits; fixed-seed sampling repeats;
- sampling (README, "attnscope model generate"): the sampler's distribution (attnscope_sample)
  equals an independent float64 reference of softmax(logits / T), top-k, the smallest prefix
  whose renormalised mass reaches P, renormalised, for a grid of T, k and P with ties at the
  cuts; its draws over many seeds pass a chi-square test against that distribution (stated
  false-alarm rate) and never leave it; each token `model generate` samples is the one the
  reference distribution and an independent mt19937_64 (u = (x >> 11) 2^-53) pick, and its
  first tokens over many seeds follow the reference distribution;
- incremental runs (append, insert in the middle, delete, replace) equal fresh runs bit for
  bit (attnscope_incremental), and compute only from the first changed token on;
- bad input: one line, exit 2 for usage and 1 for input, nothing written.
"""
import json
import math
import os
import subprocess
import tempfile
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
SAMPLE_BIN = os.environ.get("ATTNSCOPE_SAMPLE_BIN", "")
# Chi-square tests of the draws: false-alarm rate ALPHA each (a correct sampler fails one on a
# random set of seeds with probability ALPHA; the seeds are fixed, so a run is deterministic).
ALPHA = 1e-4
Z_ALPHA = 3.719016  # the standard normal's upper 1e-4 quantile

# name, family, make_model options (context P = 160: the sequences cross a 64-row block)
FAMILIES = [
    ("gpt2", "gpt2", dict(seed=41)),
    ("llama-gqa", "llama", dict(seed=42, G=2)),
    ("mistral-window5", "mistral", dict(seed=43, G=2, window=5)),
    ("qwen2", "qwen2", dict(seed=44, G=2)),
    ("qwen3-qk-norm", "qwen3", dict(seed=47, G=2, head_dim=16)),
    ("smollm3-nope", "smollm3", dict(seed=48, G=2, N=4)),
    ("gemma2-sliding", "gemma2", dict(seed=45, G=2, window=4, N=3)),
    ("gemma3-local-global", "gemma3_text", dict(seed=49, G=2, window=4, N=3, pattern=3, head_dim=16)),
    ("olmo2-whole-qk-norm", "olmo2", dict(seed=50, G=2)),
    ("phi3-fused-longrope", "phi3", dict(seed=51, G=2, head_dim=16, rotary=0.75)),
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


class MT19937_64:
    """std::mt19937_64 written out from its definition (Matsumoto and Nishimura's MT19937-64
    parameters, the C++ standard's default seeding), independent of the C++ library."""
    MASK = (1 << 64) - 1

    def __init__(self, seed):
        self.mt = [seed & self.MASK]
        for i in range(1, 312):
            prev = self.mt[-1]
            self.mt.append((6364136223846793005 * (prev ^ (prev >> 62)) + i) & self.MASK)
        self.index = 312

    def __call__(self):
        mt = self.mt
        if self.index >= 312:
            for i in range(312):
                x = (mt[i] & 0xFFFFFFFF80000000) | (mt[(i + 1) % 312] & 0x7FFFFFFF)
                mt[i] = mt[(i + 156) % 312] ^ (x >> 1) ^ (0xB5026F5AA96619E9 if x & 1 else 0)
            self.index = 0
        x = mt[self.index]
        self.index += 1
        x ^= (x >> 29) & 0x5555555555555555
        x ^= (x << 17) & 0x71D67FFFEDA60000
        x ^= (x << 37) & 0xFFF7EEE000000000
        x ^= x >> 43
        return x & self.MASK

    def uniform(self):
        return (self() >> 11) * 2.0 ** -53


def reference_kept(logits, T, k, p, tol=0.0):
    """The sampling distributions a step may draw from, float64: q = softmax(logits / T); ids by q,
    ties the smaller id first; the first k (0: all); then the smallest prefix whose renormalised
    mass reaches p; renormalised. A list of (ids, probs): one entry, or two when the prefix's
    mass lies within tol of p (float32 logits may cut either way)."""
    z = np.asarray(logits, dtype=np.float64) / T
    q = np.exp(z - z.max())
    q /= q.sum()
    order = sorted(range(len(q)), key=lambda i: (-q[i], i))
    if k > 0:
        order = order[:k]
    mass = q[order] / q[order].sum()
    cuts = [len(order)]
    if p < 1.0:
        cumulative = np.cumsum(mass)
        cuts = sorted({int(np.argmax(cumulative >= p - t)) + 1 for t in ({0.0, tol, -tol} if tol else {0.0})
                       if (cumulative >= p - t).any()})
    return [(order[:n], q[order[:n]] / q[order[:n]].sum()) for n in cuts]


def inverse_cdf(ids, probs, u, tol=0.0):
    """The ids whose cumulative interval holds u (more than one only within tol of a boundary)."""
    upper = np.cumsum(probs)
    lower = upper - probs
    hit = [i for i, lo, hi in zip(ids, lower, upper) if lo - tol <= u < hi + tol]
    return hit or [ids[-1]]


def chi_square_limit(df):
    """The chi-square distribution's upper ALPHA quantile (Wilson and Hilferty's approximation)."""
    a = 2.0 / (9.0 * df)
    return df * (1.0 - a + Z_ALPHA * math.sqrt(a)) ** 3


def chi_square(counts, probs):
    """Pearson's statistic and degrees of freedom; expected counts under 5 pooled into one bin."""
    n = sum(counts)
    expected = n * np.asarray(probs, dtype=np.float64)
    observed = np.asarray(counts, dtype=np.float64)
    small = expected < 5
    if small.any():
        expected = np.append(expected[~small], expected[small].sum())
        observed = np.append(observed[~small], observed[small].sum())
    stat = float(np.sum((observed - expected) ** 2 / np.where(expected > 0, expected, 1)))
    return stat, len(expected) - 1


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

    # (T, k, P, seed): temperature below and above 1, top-k alone, top-p alone at a cut that
    # keeps several ids, and the three together.
    SAMPLINGS = [(1.5, 40, 0.95, 7), (0.6, 0, 1.0, 3), (2.5, 0, 1.0, 4), (1.0, 3, 1.0, 5), (1.7, 0, 0.6, 6),
                 (1.3, 6, 0.8, 9)]

    def test_each_sampled_token_is_the_references_pick(self):
        """Every step of `model generate --temperature T --top-k k --top-p P --seed S`: the token
        is the one the reference distribution of that step (from the float64 reference's logits)
        and the independent mt19937_64(S) pick; u within PROB_TOL of a boundary accepts either."""
        folder = ref.case_dir("gen", "sampling-replay")
        cfg, tensors = hf.make_model("llama", P=160, seed=47, G=2)
        stored = hf.write_folder(folder, cfg, tensors)
        for T, k, p, seed in self.SAMPLINGS:
            with self.subTest(temperature=T, top_k=k, top_p=p, seed=seed):
                out = os.path.join(folder + "-out", f"{T}-{k}-{p}")
                result = generate(folder, out, "--ids", "1,2,3", "--tokens", "12", "--temperature", str(T),
                                  "--top-k", str(k), "--top-p", str(p), "--seed", str(seed))
                self.assertEqual(result.returncode, 0, result.stderr)
                steps = read_outputs(out)[0]
                got = [s["id"] for s in steps]
                logits, _ = hf.forward(cfg, stored, [1, 2, 3] + got)
                self.check_steps(steps, lambda position: logits[position - 1], 3)
                rng = MT19937_64(seed)
                for n, step in enumerate(steps):
                    u = rng.uniform()
                    row = logits[step["position"] - 1].numpy()
                    allowed = set()
                    for ids, probs in reference_kept(row, T, k, p, tol=PROB_TOL):
                        allowed.update(inverse_cdf(ids, probs, u, tol=PROB_TOL))
                    self.assertIn(step["id"], allowed,
                                  f"step {n}: sampled {step['id']}, the reference distribution "
                                  f"(T={T}, top-k={k}, top-p={p}) and u={u:.6f} give {sorted(allowed)}")

    def test_first_tokens_over_many_seeds_follow_the_reference(self):
        """The first generated token over SEEDS seeds: never outside the reference's kept ids, and
        its frequencies pass a chi-square test against the reference distribution (ALPHA)."""
        folder = ref.case_dir("gen", "sampling-frequencies")
        cfg, tensors = hf.make_model("llama", P=160, seed=47, G=2)
        stored = hf.write_folder(folder, cfg, tensors)
        prompt = [1, 2, 3]
        row = hf.forward(cfg, stored, prompt)[0][-1].numpy()
        T, k, p, seeds = 2.0, 8, 0.9, 300
        (ids, probs), = reference_kept(row, T, k, p)
        self.assertGreaterEqual(len(ids), 4, "the case should keep several ids")
        counts = dict.fromkeys(ids, 0)
        for seed in range(seeds):
            out = os.path.join(folder + "-out", str(seed))
            result = generate(folder, out, "--ids", ",".join(map(str, prompt)), "--tokens", "1", "--temperature",
                              str(T), "--top-k", str(k), "--top-p", str(p), "--seed", str(seed))
            self.assertEqual(result.returncode, 0, result.stderr)
            first = read_outputs(out)[0][0]["id"]
            self.assertIn(first, counts, f"seed {seed} drew {first}, outside top-k / nucleus {ids}")
            counts[first] += 1
        stat, df = chi_square([counts[i] for i in ids], probs)
        self.assertLess(stat, chi_square_limit(df),
                        f"first tokens {counts} over {seeds} seeds, the reference {dict(zip(ids, probs.round(4)))}: "
                        f"chi-square {stat:.1f} on {df} df (limit {chi_square_limit(df):.1f}, false alarm {ALPHA})")

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


class Sampler(unittest.TestCase):
    """core/model/generate.h's sampler through attnscope_sample on crafted logits: its distribution
    equals reference_kept for a grid of T, k and P (ties at the top-k cut and at the top-p cut),
    and its draws over many seeds follow it (chi-square, ALPHA) and never leave it."""

    V = 12

    @classmethod
    def rows(cls):
        rng = np.random.default_rng(39)
        tail = list(np.linspace(-1.0, -3.0, cls.V - 6))
        return np.array([
            rng.normal(0.0, 2.0, cls.V),                # random
            [5.0, 4.0, 3.0, 3.0, 3.0, 3.0] + tail,      # ties straddle the top-k cut at 3, 4 and 5
            [3.0, 1.0, 1.0, 1.0, 1.0, 1.0] + tail,      # ties straddle the top-p cut
            [0.0] * cls.V,                              # all equal
            [9.0, 0.5, 0.4, 0.3, 0.2, 0.1] + tail,      # one id holds most of the mass
            rng.normal(0.0, 0.3, cls.V) - 40.0,         # flat, far below zero
        ], dtype=np.float32)

    def sample(self, logits, T, k, p, seeds=0):
        with tempfile.TemporaryDirectory(dir=ref.TMP if os.path.isdir(ref.TMP) else None) as tmp:
            path = os.path.join(tmp, "logits.npy")
            np.save(path, logits)
            done = subprocess.run([SAMPLE_BIN, path, str(T), str(k), str(p), str(seeds)], capture_output=True,
                                  text=True, timeout=300)
        self.assertEqual(done.returncode, 0, done.stderr)
        return json.loads(done.stdout)

    def test_distribution_equals_the_reference(self):
        logits = self.rows()
        for T in (0.5, 1.0, 1.7):
            for k in (0, 1, 3, 4, 5):
                for p in (1.0, 0.9, 0.6, 0.3):
                    got = self.sample(logits, T, k, p)
                    for r, row in enumerate(logits):
                        with self.subTest(temperature=T, top_k=k, top_p=p, row=r):
                            (ids, probs), = reference_kept(row, T, k, p)
                            kept = got[r]["kept"]
                            self.assertEqual([i for i, _ in kept], ids,
                                             f"kept ids differ from softmax(logits / {T}), top-{k}, top-p {p}")
                            np.testing.assert_allclose([q for _, q in kept], probs, rtol=1e-9, atol=1e-12)

    def test_draws_follow_the_distribution(self):
        logits = self.rows()
        seeds = 20000
        for T, k, p in [(0.5, 0, 1.0), (1.7, 0, 1.0), (1.0, 4, 1.0), (1.0, 0, 0.6), (1.7, 5, 0.9)]:
            got = self.sample(logits, T, k, p, seeds)
            for r, row in enumerate(logits):
                with self.subTest(temperature=T, top_k=k, top_p=p, row=r):
                    (ids, probs), = reference_kept(row, T, k, p)
                    draws = np.asarray(got[r]["draws"])
                    outside = sorted(set(draws.tolist()) - set(ids))
                    self.assertEqual(outside, [], f"drew ids outside top-k / nucleus {ids}")
                    counts = [int(np.sum(draws == i)) for i in ids]
                    if len(ids) > 1:
                        stat, df = chi_square(counts, probs)
                        self.assertLess(stat, chi_square_limit(df),
                                        f"{seeds} draws {counts} against {probs.round(4).tolist()}: chi-square "
                                        f"{stat:.1f} on {df} df (limit {chi_square_limit(df):.1f}, false alarm {ALPHA})")

    def test_the_mt19937_64_reference_is_the_standards(self):
        """The C++ standard's check value: the 10000th output of a default-seeded (5489) mt19937_64."""
        rng = MT19937_64(5489)
        for _ in range(9999):
            rng()
        self.assertEqual(rng(), 9981545732273789042)


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
    # issue 38: per-head q/k norm before RoPE, NoPE layers, local/global layers with a RoPE each
    ("qwen3-qk-norm", "qwen3", dict(seed=47, G=2, head_dim=16), (6, 2)),
    ("smollm3-nope", "smollm3", dict(seed=48, G=2, N=4), (5, 1)),
    ("gemma3-local-global", "gemma3_text", dict(seed=49, G=2, window=4, N=3, pattern=3, head_dim=16), (7, 2)),
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
