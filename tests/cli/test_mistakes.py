"""`attnscope compute --mistake NAME` (the mistakes lab) against float64 NumPy.

floor-div-scale is seed 000's `scores = q @ k^T // math.sqrt(d)`: NumPy computes the same
floor division and the rest of the pipeline; no-contiguous reshapes the [B, H, L, d]
context to [B, L, D] without the transpose. Tolerance 1e-5 absolute on probabilities and
outputs; floor-div scores must be whole numbers equal to the reference's.
"""
import math
import os
import unittest
import zlib

import numpy as np

import reference as ref

ATOL = 1e-5


def softmax_masked(scores, allowed4):
    e = np.where(allowed4, np.exp(scores - np.where(allowed4, scores, -np.inf).max(-1, keepdims=True)), 0.0)
    return e / e.sum(-1, keepdims=True)


def buggy_reference(case, heads, allowed, mistake):
    """float64 MHA as the buggy module computes it (no fully masked rows in these cases)."""
    query, key, value = (x.astype(np.float64) for x in (case["query"], case["key"], case["value"]))
    w = {n: case[n].astype(np.float64) for n in ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o")}
    B, L, _ = query.shape
    S = key.shape[1]
    D = w["w_q"].shape[0]
    d = D // heads

    def split(x, T):
        return x.reshape(B, T, heads, d).transpose(0, 2, 1, 3)

    q = split(query @ w["w_q"].T + w["b_q"], L)
    k = split(key @ w["w_k"].T + w["b_k"], S)
    v = split(value @ w["w_v"].T + w["b_v"], S)
    raw = np.einsum("bhld,bhsd->bhls", q, k)
    if mistake == "floor-div-scale":
        scaled = np.floor_divide(raw, math.sqrt(d))
        steps = raw / math.sqrt(d)
        near_step = np.abs(steps - np.round(steps)) < 1e-4
    else:
        scaled = raw / math.sqrt(d)
        near_step = np.zeros_like(raw, dtype=bool)
    allowed4 = np.broadcast_to(allowed[:, None], raw.shape)
    scores = np.where(allowed4, scaled, -np.inf)
    probs = softmax_masked(scores, allowed4)
    context_heads = probs @ v  # [B, H, L, d]
    if mistake == "no-contiguous":
        context = context_heads.reshape(B, L, D)  # no transpose(1, 2)
    else:
        context = context_heads.transpose(0, 2, 1, 3).reshape(B, L, D)
    output = context @ w["w_o"].T + w["b_o"]
    return {"scores": scores, "probs": probs, "context": context, "output": output,
            "near_step": int(near_step[allowed4].sum())}


class MistakesTest(unittest.TestCase):
    def run_case(self, name, mistake, heads=2, mask="causal", **sizes):
        case = ref.make_case(zlib.crc32(name.encode()), **sizes)
        case["query"] = case["query"] * 3.0  # spread the scores over several integers
        case.setdefault("key", case["query"])
        case.setdefault("value", case["query"])
        bundle = ref.write_bundle(os.path.join(ref.case_dir("mistakes", name), "bundle"), case)
        out = os.path.join(ref.case_dir("mistakes", name + "_out"), "out")
        result = ref.run_compute([bundle, "--out", out, "--heads", str(heads), "--mask", mask,
                                  "--mistake", mistake])
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("mistake " + mistake, result.stdout)
        got = ref.load_outputs(out)
        B, L, _ = case["query"].shape
        S = case["key"].shape[1]
        allowed = ref.combined_mask(mask, B, L, S)
        return got, buggy_reference(case, heads, allowed, mistake)

    def test_floor_div_scale_matches_numpy(self):
        for name, heads, sizes in [("floor_self", 2, dict(B=2, L=6, D=8)),
                                   ("floor_cross", 4, dict(B=1, L=4, S=7, D=12, Dk=5, Dv=3))]:
            with self.subTest(name):
                got, want = self.run_case(name, "floor-div-scale", heads=heads, mask="causal-br", **sizes)
                self.assertEqual(want["near_step"], 0, "a score sits on an integer step: change the seed")
                self.assertEqual(got["shapes"]["mistake"], "floor-div-scale")
                finite = np.isfinite(want["scores"])
                np.testing.assert_array_equal(np.isfinite(got["scores"]), finite)
                np.testing.assert_array_equal(got["scores"][finite], want["scores"][finite])
                self.assertTrue(np.all(got["scores"][finite] == np.floor(got["scores"][finite])))
                self.assertGreater(len(np.unique(got["scores"][finite])), 2)
                np.testing.assert_allclose(got["probs"], want["probs"], rtol=0, atol=ATOL)
                np.testing.assert_allclose(got["output"], want["output"], rtol=0, atol=ATOL)
                scores_stage = [s for s in got["shapes"]["stages"] if s["name"] == "scores"][0]
                self.assertIn("// math.sqrt(d)", scores_stage["code"])

    def test_no_contiguous_matches_numpy(self):
        got, want = self.run_case("no_contiguous", "no-contiguous", heads=4, mask="none", B=2, L=5, D=12)
        np.testing.assert_allclose(got["probs"], want["probs"], rtol=0, atol=ATOL)
        np.testing.assert_allclose(got["context"], want["context"], rtol=0, atol=ATOL)
        np.testing.assert_allclose(got["output"], want["output"], rtol=0, atol=ATOL)

    def test_bad_name_is_a_usage_error_listing_names(self):
        result = ref.run_compute(["--demo", "--out", ref.case_dir("mistakes", "bad_name"), "--mistake", "floor-div"])
        self.assertEqual(result.returncode, 2)
        self.assertEqual(result.stderr.strip(),
                         "attnscope compute: --mistake: unknown mistake 'floor-div' (one of: none, floor-div-scale, "
                         "kv-reshape-with-L, no-head-split, shared-linear, no-scale, no-contiguous, "
                         "mask-not-broadcast)")

    def test_kv_reshape_with_L_raises_torch_error_for_cross_attention(self):
        case = ref.make_case(3, B=2, L=4, S=5, D=20)
        bundle = ref.write_bundle(os.path.join(ref.case_dir("mistakes", "kv_reshape"), "bundle"), case)
        out = os.path.join(ref.case_dir("mistakes", "kv_reshape_out"), "out")
        result = ref.run_compute([bundle, "--out", out, "--heads", "4", "--mistake", "kv-reshape-with-L"])
        self.assertEqual(result.returncode, 1)
        # What torch 1.13 says for k.view(2, 4, 4, 5) on 2*5*20 values.
        self.assertEqual(result.stderr.strip(),
                         "attnscope compute: RuntimeError: shape '[2, 4, 4, 5]' is invalid for input of size 200 "
                         "(seed 000 reshapes K/V with the query length; use S)")
        self.assertFalse(os.path.exists(out))
        try:
            import torch
        except ImportError:  # pragma: no cover - depends on the machine
            return
        with self.assertRaises(RuntimeError) as raised:
            torch.zeros(2, 5, 20).view(2, 4, 4, 5)  # seed 000's k.view(B, L, H, d) with S = 5
        self.assertIn("RuntimeError: " + str(raised.exception) + " (seed 000", result.stderr)


if __name__ == "__main__":
    unittest.main()
