"""Attention variants through `attnscope compute`: --kv-heads, --rope, --rope-style, --alibi,
--softcap, --sinks and the same bundle.json keys, against an independent float64 NumPy
implementation written here from the papers (Hugging Face LLaMA's rotate_half, GPT-J's
rotate_every_two, Press et al.'s get_slopes, Gemma 2's soft-cap, StreamingLLM's sinks).

`export` and `analyze` take the same flags: their numbers are checked against the same
reference. Tolerances: probabilities and outputs within 1e-5 absolute.
"""
import glob
import json
import math
import os
import subprocess
import unittest
import zlib

import numpy as np

import reference as ref

ATOL = 1e-5


def get_slopes(n):
    """ALiBi slopes, as Press et al.'s reference code writes them."""
    def get_slopes_power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        ratio = start
        return [start * ratio ** i for i in range(n)]
    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 2 ** math.floor(math.log2(n))
    return (get_slopes_power_of_2(closest_power_of_2)
            + get_slopes(2 * closest_power_of_2)[0::2][:n - closest_power_of_2])


def rope(x, base, style):
    """x [B, heads, T, d] at positions 0..T-1 (HF LLaMA rotate_half or GPT-J interleaved)."""
    T, d = x.shape[2], x.shape[3]
    inv_freq = 1.0 / base ** (np.arange(0, d, 2, dtype=np.float64) / d)
    angles = np.outer(np.arange(T, dtype=np.float64), inv_freq)  # [T, d/2]
    if style == "half":
        cos = np.concatenate([np.cos(angles)] * 2, axis=-1)
        sin = np.concatenate([np.sin(angles)] * 2, axis=-1)
        rotated = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], axis=-1)
    else:
        cos = np.repeat(np.cos(angles), 2, axis=-1)
        sin = np.repeat(np.sin(angles), 2, axis=-1)
        rotated = np.stack([-x[..., 1::2], x[..., 0::2]], axis=-1).reshape(x.shape)
    return x * cos + rotated * sin


def variant_reference(case, H, allowed, kv_heads=None, rope_base=None, rope_style="half", alibi=False,
                      softcap=None):
    """float64: projections, head split (G K/V heads), RoPE, repeat_interleave, scores,
    scale, soft-cap, ALiBi, mask, softmax, context, output."""
    query, key, value = (x.astype(np.float64) for x in ref._inputs(case))
    w = {n: case[n].astype(np.float64) for n in ("w_q", "w_k", "w_v", "w_o")}
    B, L, _ = query.shape
    S = key.shape[1]
    D = w["w_q"].shape[0]
    d = D // H
    G = w["w_k"].shape[0] // d if kv_heads is None else kv_heads
    bias = lambda n, rows: case[n].astype(np.float64) if n in case else np.zeros(rows)  # noqa: E731
    q = (query @ w["w_q"].T + bias("b_q", D)).reshape(B, L, H, d).transpose(0, 2, 1, 3)
    k = (key @ w["w_k"].T + bias("b_k", G * d)).reshape(B, S, G, d).transpose(0, 2, 1, 3)
    v = (value @ w["w_v"].T + bias("b_v", G * d)).reshape(B, S, G, d).transpose(0, 2, 1, 3)
    if rope_base is not None:
        q, k = rope(q, rope_base, rope_style), rope(k, rope_base, rope_style)
    k = np.repeat(k, H // G, axis=1)  # torch.repeat_interleave(H // G, dim=1)
    v = np.repeat(v, H // G, axis=1)
    scores = np.einsum("bhld,bhsd->bhls", q, k) / math.sqrt(d)
    if softcap is not None:
        scores = softcap * np.tanh(scores / softcap)
    if alibi:
        distance = np.abs(np.arange(L)[:, None] - np.arange(S)[None, :])
        scores = scores - np.array(get_slopes(H))[None, :, None, None] * distance[None, None]
    mask4 = np.broadcast_to(allowed[:, None], scores.shape)
    scores = np.where(mask4, scores, -np.inf)
    e = np.where(mask4, np.exp(scores - scores.max(axis=-1, keepdims=True)), 0.0)
    probs = e / e.sum(axis=-1, keepdims=True)
    context = np.einsum("bhls,bhsd->bhld", probs, v).transpose(0, 2, 1, 3).reshape(B, L, D)
    return {"probs": probs, "output": context @ w["w_o"].T + bias("b_o", D), "k": k, "G": G}


def gqa_case(seed, B, L, D, H, G, Din=None):
    """Random bundle arrays with w_k/w_v [G*d, Din] and b_k/b_v [G*d]."""
    case = ref.make_case(seed, B=B, L=L, D=D, Dq=Din)
    rows = G * (D // H)
    for name in ("w_k", "w_v", "b_k", "b_v"):
        case[name] = case[name][:rows].copy()
    return case


# name, sizes, H, G (in the weights), mask, flags, bundle.json, reference keyword arguments
CASES = [
    dict(name="mqa_causal", B=2, L=6, D=16, H=4, G=1, mask="causal", flags=[], ref={}),
    dict(name="gqa_G2", B=1, L=7, D=24, H=6, G=2, mask="none", flags=["--kv-heads", "2"], ref={}),
    dict(name="mha_G_is_H", B=1, L=5, D=16, H=4, G=4, mask="window:1", flags=[], ref={}),
    dict(name="rope_half_default_base", B=1, L=9, D=16, H=2, G=2, mask="causal", flags=["--rope"],
         ref=dict(rope_base=10000.0)),
    dict(name="rope_interleaved_base", B=2, L=8, D=16, H=4, G=2, mask="none",
         flags=["--rope", "500", "--rope-style", "interleaved"], ref=dict(rope_base=500.0, rope_style="interleaved")),
    dict(name="alibi_H8", B=1, L=10, D=32, H=8, G=8, mask="causal", flags=["--alibi"], ref=dict(alibi=True)),
    dict(name="alibi_H6", B=1, L=9, D=24, H=6, G=3, mask="none", flags=["--alibi"], ref=dict(alibi=True)),
    dict(name="softcap", B=1, L=8, D=8, H=2, G=2, mask="none", flags=["--softcap", "0.5"], ref=dict(softcap=0.5)),
    dict(name="sinks_window", B=1, L=12, D=8, H=2, G=1, mask="causal-window:3", flags=["--sinks", "2"], ref={},
         ref_mask="causal-window:3+sinks:2"),
    dict(name="llama_gqa_rope_causal", B=2, L=10, D=32, H=8, G=2, mask="causal", flags=["--rope"],
         ref=dict(rope_base=10000.0)),
    dict(name="bundle_json_keys", B=1, L=9, D=24, H=6, G=2, mask="causal-window:2",
         meta=dict(kv_heads=2, rope=1000, rope_style="interleaved", alibi=True, softcap=3.0, sinks=1), flags=[],
         ref=dict(rope_base=1000.0, rope_style="interleaved", alibi=True, softcap=3.0),
         ref_mask="causal-window:2+sinks:1"),
]


class VariantComputeTest(unittest.TestCase):
    def test_cases_against_numpy(self):
        for c in CASES:
            with self.subTest(c["name"]):
                root = ref.case_dir("variants", c["name"])
                case = gqa_case(zlib.crc32(c["name"].encode()) % 1000, c["B"], c["L"], c["D"], c["H"], c["G"])
                meta = dict(heads=c["H"], mask=c["mask"], **c.get("meta", {}))
                bundle = ref.write_bundle(os.path.join(root, "bundle"), case, meta)
                out = os.path.join(root, "out")
                result = ref.run_compute([bundle, "--out", out] + c["flags"])
                self.assertEqual(result.returncode, 0, result.stderr)
                got = ref.load_outputs(out)
                allowed = ref.spec_mask(c.get("ref_mask", c["mask"]), c["B"], c["L"], c["L"])
                want = variant_reference(case, c["H"], allowed, **c["ref"])
                np.testing.assert_allclose(got["probs"], want["probs"], atol=ATOL, rtol=0)
                np.testing.assert_allclose(got["output"], want["output"], atol=ATOL, rtol=0)
                self.assertEqual(got["mask"].astype(bool).tolist(), allowed.tolist())
                shapes = got["shapes"]
                self.assertEqual(shapes["sizes"]["G"], want["G"])
                self.assertEqual(list(got["k"].shape), [c["B"], want["G"], c["L"], c["D"] // c["H"]])
                if want["G"] != c["H"]:
                    self.assertIn("gqa", shapes["variants"])
                    self.assertIn("k_repeat", [s["name"] for s in shapes["stages"]])
                if c["ref"].get("alibi"):
                    np.testing.assert_allclose(shapes["variants"]["alibi"]["slopes"], get_slopes(c["H"]), rtol=1e-12)

    def test_rope_matches_hf_convention_far_out(self):
        """Positions past 1000 in both conventions, with a causal window to keep rows small."""
        for style in ("half", "interleaved"):
            with self.subTest(style):
                root = ref.case_dir("variants", "rope_far_" + style)
                case = gqa_case(7, 1, 1030, 8, 1, 1)
                bundle = ref.write_bundle(os.path.join(root, "bundle"), case, dict(mask="causal-window:16"))
                out = os.path.join(root, "out")
                result = ref.run_compute([bundle, "--out", out, "--rope-style", style, "--rope"])
                self.assertEqual(result.returncode, 0, result.stderr)
                got = ref.load_outputs(out)
                allowed = ref.spec_mask("causal-window:16", 1, 1030, 1030)
                want = variant_reference(case, 1, allowed, rope_base=10000.0, rope_style=style)
                np.testing.assert_allclose(got["probs"], want["probs"], atol=ATOL, rtol=0)
                np.testing.assert_allclose(got["output"], want["output"], atol=ATOL, rtol=0)

    def test_demo_with_variants_prints_them(self):
        out = ref.case_dir("variants", "demo")
        result = ref.run_compute(["--demo", "--out", out, "--kv-heads", "2", "--rope", "--alibi",
                                  "--softcap", "30", "--mask", "causal-window:3", "--sinks", "1"])
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("variant gqa G=2, rope half base 10000, softcap 30, alibi, sinks 1", result.stdout)
        got = ref.load_outputs(out)
        self.assertEqual(got["shapes"]["sizes"]["G"], 2)
        self.assertEqual(got["k"].shape[1], 2)

    def test_bad_input_one_line(self):
        root = ref.case_dir("variants", "bad")
        good = ref.write_bundle(os.path.join(root, "good"), gqa_case(3, 1, 4, 16, 4, 2), dict(heads=4))
        odd = ref.write_bundle(os.path.join(root, "odd"), gqa_case(3, 1, 4, 6, 2, 2), dict(heads=2))
        rows = gqa_case(3, 1, 4, 16, 4, 4)
        rows["w_k"], rows["w_v"] = rows["w_k"][:6], rows["w_v"][:6]
        del rows["b_k"], rows["b_v"]
        bad_rows = ref.write_bundle(os.path.join(root, "rows"), rows, dict(heads=4))
        bad_meta = ref.write_bundle(os.path.join(root, "meta"), gqa_case(3, 1, 4, 16, 4, 2),
                                    dict(heads=4, softcap=0))
        cases = [
            ([good, "--kv-heads", "3"], 1, ["kv_heads G=3 does not divide H=4"]),
            ([good, "--heads", "3"], 1, ["does not divide the model size D=16"]),
            ([bad_rows], 1, ["w_k.npy", "6 rows, not a multiple of the head size d=4"]),
            ([odd, "--rope"], 1, ["RoPE needs an even head size d, got d=3"]),
            ([good, "--softcap", "0"], 2, ["--softcap: C must be a number > 0"]),
            ([good, "--softcap", "-2"], 2, ["--softcap: C must be a number > 0"]),
            ([good, "--rope", "0.5"], 2, ["--rope: BASE '0.5' is not a number > 1"]),
            ([good, "--rope-style", "sideways", "--rope"], 2, ["--rope-style: 'sideways' is not one of half, interleaved"]),
            ([good, "--sinks", "2", "--mask", "causal"], 2, ["--sinks needs a window term in --mask"]),
            ([good, "--sinks", "2"], 1, ["sinks:2 needs a window term"]),
            ([good, "--kv-heads", "0"], 2, ["--kv-heads: G must be in 1.."]),
            ([bad_meta], 1, ["bundle.json", '"softcap" must be a number > 0']),
        ]
        for args, code, words in cases:
            with self.subTest(" ".join(args[1:]) or args[0]):
                out = os.path.join(root, "out")
                result = ref.run_compute(args + ["--out", out])
                self.assertEqual(result.returncode, code, result.stderr)
                self.assertEqual(result.stderr.count("\n"), 1, result.stderr)
                for word in words:
                    self.assertIn(word, result.stderr)
                self.assertFalse(os.path.exists(os.path.join(out, "probs.npy")))


class VariantExportAnalyzeTest(unittest.TestCase):
    """export and analyze get the variant flags through the same run options as compute."""

    FLAGS = ["--kv-heads", "2", "--rope", "500", "--rope-style", "interleaved", "--alibi", "--softcap", "4",
             "--mask", "causal-window:3", "--sinks", "1"]
    REF = dict(rope_base=500.0, rope_style="interleaved", alibi=True, softcap=4.0)

    def setUp(self):
        self.root = ref.case_dir("variants", "export_analyze")
        # MHA weights [D, Dk]: --kv-heads 2 pools K/V heads per group, as the GQA paper does.
        self.case = ref.make_case(11, B=1, L=9, D=16)
        self.bundle = ref.write_bundle(os.path.join(self.root, "bundle"), self.case, dict(heads=4))
        pooled = dict(self.case)
        for name in ("w_k", "w_v", "b_k", "b_v"):
            x = self.case[name].astype(np.float64)
            rows = x.reshape(2, 2, 4, *x.shape[1:]).mean(axis=1)  # [G, H/G, d, ...] -> mean per group
            pooled[name] = rows.reshape(8, *x.shape[1:])
        allowed = ref.spec_mask("causal-window:3+sinks:1", 1, 9, 9)
        self.want = variant_reference(pooled, 4, allowed, **self.REF)

    def test_export_npy_equals_reference(self):
        out = os.path.join(self.root, "export")
        result = subprocess.run([ref.BIN, "export", self.bundle, "--heads-count", "4", "--heads", "all", "--what",
                                 "probs", "--format", "npy", "--out", out] + self.FLAGS,
                                capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        for h in range(4):
            files = glob.glob(os.path.join(out, f"probs_L0_H{h}_b0_*.npy"))
            self.assertEqual(len(files), 1, os.listdir(out))
            self.assertIn("sinks1", os.path.basename(files[0]))
            np.testing.assert_allclose(np.load(files[0]), self.want["probs"][0, h], atol=ATOL, rtol=0)

    def test_analyze_measures_the_variant_maps(self):
        result = subprocess.run([ref.BIN, "analyze", self.bundle, "--heads", "4", "--json"] + self.FLAGS,
                                capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        rows = json.loads(result.stdout)
        self.assertEqual(len(rows), 4)
        probs = self.want["probs"]
        for row in rows:
            p = probs[0, row["head"]]
            self.assertAlmostEqual(row["sink_mass"], float(p[:, 0].mean()), delta=ATOL)
            self.assertAlmostEqual(row["max_prob"], float(p.max(axis=1).mean()), delta=ATOL)

    def test_export_usage_errors(self):
        result = subprocess.run([ref.BIN, "export", self.bundle, "--softcap", "0", "--out", self.root],
                                capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("--softcap: C must be a number > 0", result.stderr)
        self.assertEqual(result.stderr.count("\n"), 1, result.stderr)


if __name__ == "__main__":
    unittest.main()
