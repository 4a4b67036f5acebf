"""`attnscope compute` end to end against a float64 NumPy reference and PyTorch 1.13.

Table-driven: each case writes a bundle, runs the binary, loads every output with
numpy.load and compares. Tolerances: probabilities, outputs, q/k/v and context within
1e-5 absolute; finite scores within 1e-4 absolute; masked scores exactly the fill value.
The PyTorch comparisons skip when torch cannot be imported; the NumPy ones always run.
"""
import json
import os
import zlib
import unittest

import numpy as np

import reference as ref

try:
    import torch  # imported once for the whole module (slow)
except ImportError:  # pragma: no cover - depends on the machine
    torch = None

ATOL = 1e-5
SCORE_ATOL = 1e-4


# name: sizes for ref.make_case, heads, mask spec, extra bundle files, CLI flags,
#       scale (None = 1/sqrt(d)), fill ("inf" or "1e9").
CASES = [
    dict(name="self_nomask", sizes=dict(B=1, L=5, D=8), heads=2),
    dict(name="self_causal_b2", sizes=dict(B=2, L=7, D=12), heads=3, mask="causal"),
    dict(name="cross_L4_S6_kdim_vdim", sizes=dict(B=2, L=4, S=6, D=8, Dk=5, Dv=3), heads=2),
    dict(name="cross_Dq_Dk_Dv_all_differ", sizes=dict(B=1, L=3, S=7, D=6, Dq=5, Dk=4, Dv=9), heads=3),
    dict(name="valid_lens_npy", sizes=dict(B=2, L=4, S=6, D=8), heads=2, mask="padding",
         extra=dict(valid_lens=np.array([3, 2], dtype=np.int64))),
    dict(name="valid_lens_int32_npy", sizes=dict(B=3, L=4, S=5, D=6), heads=3, mask="padding",
         extra=dict(valid_lens=np.array([5, 1, 3], dtype=np.int32))),
    dict(name="valid_lens_flag", sizes=dict(B=2, L=4, S=6, D=8), heads=4, flags=["--valid-lens", "3,2"],
         valid_lens=[3, 2], ref_mask="padding"),
    dict(name="causal_top_left_L_gt_S", sizes=dict(B=1, L=6, S=3, D=4), heads=2, mask="causal"),
    dict(name="causal_br", sizes=dict(B=2, L=3, S=7, D=8), heads=2, mask="causal-br"),
    dict(name="window2", sizes=dict(B=1, L=9, D=8), heads=2, mask="window:2"),
    dict(name="causal_window2", sizes=dict(B=2, L=9, D=8), heads=4, mask="causal-window:2"),
    dict(name="prefix3", sizes=dict(B=1, L=8, D=6), heads=2, mask="prefix:3"),
    dict(name="segments_trailing", sizes=dict(B=1, L=8, D=6), heads=3, mask="segments:3,2"),
    dict(name="segments_cross", sizes=dict(B=2, L=5, S=7, D=6), heads=2, mask="segments:2,3"),
    dict(name="key_padding_always", sizes=dict(B=2, L=4, S=5, D=8), heads=2,
         extra=dict(key_padding=np.array([[1, 1, 0, 1, 0], [1, 0, 1, 1, 1]], dtype=bool))),
    dict(name="padding_from_key_padding", sizes=dict(B=2, L=4, S=5, D=8), heads=2, mask="padding+causal",
         extra=dict(key_padding=np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 0]], dtype=bool))),
    dict(name="attn_mask_LS", sizes=dict(B=2, L=5, S=4, D=8), heads=2, attn_mask_shape="LS"),
    dict(name="attn_mask_BLS_plus_causal", sizes=dict(B=2, L=5, D=8), heads=2, mask="causal",
         attn_mask_shape="BLS"),
    dict(name="combo_causal_window_padding", sizes=dict(B=2, L=8, D=8), heads=2,
         mask="causal+window:3+padding", extra=dict(valid_lens=np.array([8, 5]))),
    dict(name="combo_prefix_segments_keypad", sizes=dict(B=2, L=9, D=6), heads=3, mask="prefix:2+segments:4,3",
         extra=dict(key_padding=np.array([[1] * 9, [1] * 6 + [0] * 3], dtype=bool))),
    dict(name="heads_1", sizes=dict(B=2, L=5, S=3, D=7), heads=1, mask="causal-br"),
    dict(name="d_1", sizes=dict(B=1, L=6, D=4), heads=4, mask="causal"),
    dict(name="odd_sizes", sizes=dict(B=3, L=7, S=5, D=15, Dk=11, Dv=13), heads=5, mask="window:1"),
    dict(name="scale_none", sizes=dict(B=1, L=5, D=8), heads=2, flags=["--scale", "none"], scale=1.0),
    dict(name="scale_custom", sizes=dict(B=2, L=5, S=4, D=8), heads=2, mask="causal",
         flags=["--scale", "0.37"], scale=0.37),
    dict(name="fill_1e9_partial", sizes=dict(B=1, L=6, D=8), heads=2, mask="causal",
         flags=["--mask-fill", "1e9"], fill="1e9"),
    dict(name="fill_1e9_fully_masked_uniform", sizes=dict(B=2, L=4, S=6, D=8), heads=2, mask="padding",
         extra=dict(valid_lens=np.array([3, 0])), flags=["--mask-fill", "1e9"], fill="1e9"),
    dict(name="fully_masked_neg_inf_valid_lens0", sizes=dict(B=2, L=4, S=6, D=8), heads=2, mask="padding",
         extra=dict(valid_lens=np.array([0, 4]))),
    dict(name="fully_masked_neg_inf_attn_mask", sizes=dict(B=1, L=5, D=8), heads=2,
         attn_mask_shape="LS_with_empty_rows"),
    dict(name="causal_window0_diagonal_only", sizes=dict(B=1, L=5, D=4), heads=2, mask="causal-window:0"),
    dict(name="no_bias", sizes=dict(B=2, L=5, S=6, D=8, bias=False), heads=2, mask="causal-br"),
    dict(name="query_2d", sizes=dict(B=1, L=5, D=8, two_d_query=True), heads=2, mask="causal"),
    dict(name="mask_none_flag_overrides_json", sizes=dict(B=1, L=5, D=8), heads=2,
         meta=dict(heads=4, mask="causal", fill="1e9"), flags=["--heads", "2", "--mask", "none",
                                                               "--mask-fill", "inf"]),
    dict(name="json_settings_used", sizes=dict(B=1, L=6, D=8), heads=4,
         meta=dict(heads=4, mask="window:1", scale="none", notes="from bundle.json"), mask="window:1",
         scale=1.0, no_heads_flag=True),
]


def compare_with_torch(test, spec, case, allowed, got):
    """probs and output against nn.MultiheadAttention within ATOL; where every key of a
    row is masked (fill -inf) torch gives NaN and attnscope 0 probabilities."""
    heads, scale, fill = spec["heads"], spec.get("scale"), spec.get("fill", "inf")
    D = case["w_q"].shape[0]
    fully = ~allowed.any(axis=-1)
    tref = ref.torch_reference(torch, case, heads, allowed, scale=scale, fill=fill)
    tp, to = tref["probs"], tref["output"]
    if fill == "inf" and fully.any():
        # PyTorch gives NaN for a query row with every key masked; attnscope gives 0
        # probabilities and context, so that output row is the output bias.
        test.assertTrue(np.isnan(tp[np.broadcast_to(fully[:, None], tp.shape[:3])]).all())
        test.assertTrue(np.isnan(to[fully]).all())
        test.assertTrue(np.all(got["probs"][np.broadcast_to(fully[:, None], tp.shape[:3])] == 0))
        b_o = case.get("b_o", np.zeros(D, dtype=np.float32))
        np.testing.assert_allclose(got["output"][fully], np.broadcast_to(b_o, (int(fully.sum()), D)),
                                   atol=ATOL)
        ok = ~np.broadcast_to(fully[:, None], tp.shape[:3])
        np.testing.assert_allclose(got["probs"][ok], tp[ok], rtol=0, atol=ATOL)
        np.testing.assert_allclose(got["output"][~fully], to[~fully], rtol=0, atol=ATOL)
    else:
        test.assertFalse(np.isnan(tp).any())
        np.testing.assert_allclose(got["probs"], tp, rtol=0, atol=ATOL, err_msg="probs vs torch")
        np.testing.assert_allclose(got["output"], to, rtol=0, atol=ATOL, err_msg="output vs torch")


def run_case(test, spec):
    """Writes the case's bundle, runs compute and checks it against the NumPy reference.
    Returns (outputs, numpy reference, process result, case arrays, allowed mask)."""
    name = spec["name"]
    root = ref.case_dir("compute", name)
    sizes = dict(spec["sizes"])
    case = ref.make_case(zlib.crc32(name.encode()), **sizes)
    query, key, _ = ref._inputs(case)
    B, L = query.shape[:2]
    S = key.shape[1]
    extra = dict(spec.get("extra", {}))
    rng = np.random.default_rng(7)
    attn_mask = None
    kind = spec.get("attn_mask_shape")
    if kind == "LS":
        attn_mask = rng.random((L, S)) < 0.7
        attn_mask[:, 0] = True
    elif kind == "BLS":
        attn_mask = rng.random((B, L, S)) < 0.6
        attn_mask[:, :, 0] = True
    elif kind == "LS_with_empty_rows":
        attn_mask = rng.random((L, S)) < 0.6
        attn_mask[:, 0] = True
        attn_mask[1] = False
        attn_mask[3] = False
    if attn_mask is not None:
        extra["attn_mask"] = attn_mask
    arrays = dict(case)
    arrays.update(extra)
    bundle = ref.write_bundle(os.path.join(root, "bundle"), arrays, meta=spec.get("meta"))
    out = os.path.join(root, "out")
    args = [bundle, "--out", out]
    if not spec.get("no_heads_flag") and "--heads" not in spec.get("flags", []):
        args += ["--heads", str(spec["heads"])]
    if spec.get("mask"):
        args += ["--mask", spec["mask"]] if not spec.get("meta") else []
    args += spec.get("flags", [])
    result = ref.run_compute(args)
    test.assertEqual(result.returncode, 0, result.stderr)
    test.assertEqual(result.stderr, "")
    got = ref.load_outputs(out)

    valid_lens = spec.get("valid_lens", extra.get("valid_lens"))
    allowed = ref.combined_mask(spec.get("ref_mask", spec.get("mask")), B, L, S, valid_lens=valid_lens,
                                key_padding=extra.get("key_padding"), attn_mask=attn_mask)
    heads, scale, fill = spec["heads"], spec.get("scale"), spec.get("fill", "inf")
    expect = ref.numpy_reference(case, heads, allowed, scale=scale, fill=fill)
    D = case["w_q"].shape[0]
    d = D // heads

    # shapes of every file
    test.assertEqual(got["scores"].shape, (B, heads, L, S))
    test.assertEqual(got["probs"].shape, (B, heads, L, S))
    test.assertEqual(got["q"].shape, (B, heads, L, d))
    test.assertEqual(got["k"].shape, (B, heads, S, d))
    test.assertEqual(got["v"].shape, (B, heads, S, d))
    test.assertEqual(got["context"].shape, (B, L, D))
    test.assertEqual(got["output"].shape, (B, L, D))
    test.assertEqual(got["mask"].dtype, np.bool_)
    test.assertEqual(got["fully_masked"].dtype, np.bool_)
    for key_name in ("scores", "probs", "output", "q", "k", "v", "context"):
        test.assertEqual(got[key_name].dtype, np.float32, key_name)

    # masks
    np.testing.assert_array_equal(got["mask"], allowed)
    np.testing.assert_array_equal(got["fully_masked"], expect["fully_masked"])

    # numbers vs float64 NumPy
    for key_name in ("q", "k", "v", "probs", "context", "output"):
        np.testing.assert_allclose(got[key_name], expect[key_name], rtol=0, atol=ATOL, err_msg=key_name)
    mask4 = np.broadcast_to(allowed[:, None], got["scores"].shape)
    np.testing.assert_allclose(got["scores"][mask4], expect["scores"][mask4], rtol=0, atol=SCORE_ATOL)
    fill_value = -np.inf if fill == "inf" else np.float32(-1e9)
    test.assertTrue(np.all(got["scores"][~mask4] == fill_value))
    test.assertTrue(np.all(got["probs"][~mask4 & ~expect["fully_masked"][:, None, :, None]] == 0.0),
                    "masked probabilities must be exactly 0")
    sums = got["probs"].sum(axis=-1)
    row_expected = np.where(expect["fully_masked"][:, None, :] & (fill == "inf"), 0.0, 1.0)
    np.testing.assert_allclose(sums, np.broadcast_to(row_expected, sums.shape), atol=1e-5)

    shapes = got["shapes"]
    test.assertEqual(shapes["sizes"], {"B": B, "L": L, "S": S, "D": D, "H": heads, "d": d,
                                       "Dq": query.shape[2], "Dk": key.shape[2],
                                       "Dv": ref._inputs(case)[2].shape[2], "G": heads})
    test.assertAlmostEqual(shapes["scale"], (1 / np.sqrt(d)) if scale is None else scale, places=6)

    fully = expect["fully_masked"]
    if fully.any():
        test.assertIn("fully masked", result.stdout)
    return got, expect, result, case, allowed


class ComputeMatchesReferences(unittest.TestCase):
    def run_case(self, spec):
        return run_case(self, spec)

    def test_table(self):
        for spec in CASES:
            with self.subTest(case=spec["name"]):
                self.run_case(spec)

    def test_fill_1e9_fully_masked_row_is_uniform(self):
        got, _, result, _, _ = self.run_case(next(c for c in CASES if c["name"] == "fill_1e9_fully_masked_uniform"))
        np.testing.assert_allclose(got["probs"][1], 1.0 / 6, atol=1e-6)  # batch item 1: valid_len 0
        self.assertIn("uniform", result.stdout)

    def test_fully_masked_rows_reported(self):
        got, _, result, _, _ = self.run_case(next(c for c in CASES if c["name"] == "fully_masked_neg_inf_attn_mask"))
        np.testing.assert_array_equal(got["fully_masked"][0], [False, True, False, True, False])
        self.assertIn("2 query rows are fully masked: probabilities set to 0 (PyTorch gives NaN)", result.stdout)
        self.assertEqual(got["shapes"]["fully_masked_rows"], 2)

    def test_reference_has_a_rule_for_every_mask_term(self):
        # The usage line of an unknown term lists every kind of term the core has.
        result = ref.run_compute(["--demo", "--mask", "nope", "--out", ref.case_dir("compute", "mask_terms")])
        self.assertEqual(result.returncode, 2, result.stderr)
        usage = result.stderr.split("(use ", 1)[1].rsplit(")", 1)[0]
        names = [term.split(":")[0] for term in usage.split(", ") if term and term[0].isalpha() and term != "none"]
        self.assertEqual(sorted(names), sorted(ref.MASK_TERM_RULES), usage)


def run_seed_004(test):
    """d2l's example bundle (ones inputs, bias=False, valid_lens [3, 2], H=5) -> (case, outputs, run)."""
    root = ref.case_dir("compute", "seed004")
    rng = np.random.default_rng(4)
    case = {
        "query": np.ones((2, 4, 100), dtype=np.float32),
        "key": np.ones((2, 6, 100), dtype=np.float32),
        "value": np.ones((2, 6, 100), dtype=np.float32),
        "w_q": ref.xavier(rng, 100, 100), "w_k": ref.xavier(rng, 100, 100),
        "w_v": ref.xavier(rng, 100, 100), "w_o": ref.xavier(rng, 100, 100),
    }
    bundle = ref.write_bundle(os.path.join(root, "bundle"),
                              dict(case, valid_lens=np.array([3, 2])), meta={"heads": 5, "mask": "padding"})
    out = os.path.join(root, "out")
    result = ref.run_compute([bundle, "--out", out])
    test.assertEqual(result.returncode, 0, result.stderr)
    return case, ref.load_outputs(out), result


class Seed004Example(unittest.TestCase):
    """d2l's MultiHeadAttention: B=2, L=4, S=6, num_hiddens=100, H=5, valid_lens=[3, 2],
    ones inputs, bias=False -> output [2, 4, 100] and the shapes printed in the notebook."""

    def test_seed_004(self):
        case, got, result = run_seed_004(self)
        self.assertEqual(got["output"].shape, (2, 4, 100))
        allowed = ref.combined_mask("padding", 2, 4, 6, valid_lens=[3, 2])
        expect = ref.numpy_reference(case, 5, allowed)
        np.testing.assert_allclose(got["probs"], expect["probs"], atol=ATOL)
        np.testing.assert_allclose(got["output"], expect["output"], atol=ATOL)
        # Ones inputs: every key is the same, so each row is uniform over its valid keys.
        np.testing.assert_allclose(got["probs"][0, :, :, :3], 1 / 3, atol=1e-6)
        np.testing.assert_allclose(got["probs"][1, :, :, :2], 1 / 2, atol=1e-6)

        shapes = got["shapes"]
        stage_shapes = [s["shape"] for s in shapes["stages"]]
        for printed in ([2, 4, 100], [2, 6, 100], [2, 4, 5, 20], [2, 5, 4, 20], [2, 6, 5, 20],
                        [2, 5, 6, 20], [2, 5, 4, 6], [2, 4, 100]):
            self.assertIn(printed, stage_shapes)
        self.assertEqual(shapes["stages"][0]["shape"], [2, 4, 100])
        self.assertEqual(shapes["stages"][-1]["shape"], [2, 4, 100])
        for stage in shapes["stages"]:
            self.assertTrue(stage["name"] and stage["op"] and "code" in stage, stage)
        self.assertLess(stage_shapes.index([2, 4, 5, 20]), stage_shapes.index([2, 5, 4, 20]))
        folded = shapes["folded_layout"]  # transpose_qkv / transpose_output as printed in seed 004
        self.assertEqual(folded["q"], [10, 4, 20])
        self.assertEqual(folded["k"], [10, 6, 20])
        self.assertEqual(folded["valid_lens"], [10])
        self.assertEqual(folded["context"], [10, 4, 20])
        self.assertEqual(folded["output_concat"], [2, 4, 100])
        self.assertEqual(shapes["sizes"]["H"], 5)
        self.assertIn("[2, 5, 4, 6]", result.stdout)


@unittest.skipIf(torch is None, "PyTorch (python3-torch) is not installed")
class ComputeMatchesPyTorch(unittest.TestCase):
    def test_table(self):
        for spec in CASES:
            with self.subTest(case=spec["name"]):
                got, _, _, case, allowed = run_case(self, spec)
                compare_with_torch(self, spec, case, allowed, got)

    def test_seed_004(self):
        case, got, _ = run_seed_004(self)
        tref = ref.torch_reference(torch, case, 5, ref.combined_mask("padding", 2, 4, 6, valid_lens=[3, 2]))
        np.testing.assert_allclose(got["output"], tref["output"], atol=ATOL)
        np.testing.assert_allclose(got["probs"], tref["probs"], atol=ATOL)


class DemoAndDropout(unittest.TestCase):
    def test_demo_outputs_are_consistent(self):
        out = os.path.join(ref.case_dir("compute", "demo"), "out")
        result = ref.run_compute(["--demo", "--out", out, "--mask", "causal", "--heads", "2"])
        self.assertEqual(result.returncode, 0, result.stderr)
        got = ref.load_outputs(out)
        B, H, L, S = got["probs"].shape
        self.assertEqual((B, H), (1, 2))
        self.assertEqual(L, 10)  # "The cat sat on the mat because it was tired"
        self.assertEqual(got["shapes"]["query_tokens"][:3], ["The", "cat", "sat"])
        q, k, v = (got[n].astype(np.float64) for n in ("q", "k", "v"))
        d = q.shape[-1]
        scores = np.einsum("bhld,bhsd->bhls", q, k) / np.sqrt(d)
        causal = np.tril(np.ones((L, S), dtype=bool))
        np.testing.assert_array_equal(got["mask"][0], causal)
        np.testing.assert_allclose(got["scores"][:, :, causal], scores[:, :, causal], atol=SCORE_ATOL)
        e = np.where(causal, np.exp(np.where(causal, scores, 0) - np.where(causal, scores, -np.inf).max(-1, keepdims=True)), 0)
        probs = e / e.sum(-1, keepdims=True)
        np.testing.assert_allclose(got["probs"], probs, atol=ATOL)
        context = np.einsum("bhls,bhsd->bhld", probs, v).transpose(0, 2, 1, 3).reshape(B, L, H * d)
        np.testing.assert_allclose(got["context"], context, atol=ATOL)

    def test_dropout_statistics_and_seed(self):
        root = ref.case_dir("compute", "dropout")
        case = ref.make_case(11, B=2, L=64, D=16)
        bundle = ref.write_bundle(os.path.join(root, "bundle"), case)
        p = 0.3

        def run(name, *flags):
            out = os.path.join(root, name)
            result = ref.run_compute([bundle, "--out", out, "--heads", "4"] + list(flags))
            self.assertEqual(result.returncode, 0, result.stderr)
            return ref.load_outputs(out)

        a = run("a", "--dropout", str(p), "--seed", "5")
        b = run("b", "--dropout", str(p), "--seed", "5")
        c = run("c", "--dropout", str(p), "--seed", "6")
        plain = run("plain")
        self.assertNotIn("probs_dropped", plain)
        np.testing.assert_array_equal(a["probs_dropped"], b["probs_dropped"])  # same seed, same mask
        self.assertFalse(np.array_equal(a["probs_dropped"], c["probs_dropped"]))
        np.testing.assert_allclose(a["probs"], plain["probs"], atol=1e-7)  # dropout after softmax
        kept = a["probs_dropped"] != 0
        np.testing.assert_allclose(a["probs_dropped"][kept], a["probs"][kept] / (1 - p), rtol=1e-5)
        drop_rate = 1 - kept.mean()  # 2*4*64*64 = 32768 draws: std of the rate ~ 0.0025
        self.assertAlmostEqual(drop_rate, p, delta=0.02)
        allowed = np.ones((2, 64, 64), dtype=bool)
        expect = ref.numpy_reference(case, 4, allowed, probs_dropped=a["probs_dropped"])
        np.testing.assert_allclose(a["output"], expect["output"], atol=ATOL)
        self.assertTrue(a["shapes"]["dropout_applied"])

        # A later run without dropout into the same folder leaves no stale probs_dropped.npy.
        again = run("a")
        self.assertNotIn("probs_dropped", again)


class NpyFormats(unittest.TestCase):
    """Inputs in float64, format versions 2.0 and 3.0, int32 lengths: all read the same."""

    def test_versions_and_dtypes(self):
        root = ref.case_dir("compute", "formats")
        case = ref.make_case(21, B=2, L=4, S=5, D=6, bias=True)
        base = ref.write_bundle(os.path.join(root, "v1"), dict(case, valid_lens=np.array([5, 3])))
        alt = os.path.join(root, "alt")
        os.makedirs(alt)
        for i, (name, array) in enumerate(dict(case, valid_lens=np.array([5, 3], dtype=np.int32)).items()):
            if array.dtype == np.float32:
                array = array.astype(np.float64)
            version = [(1, 0), (2, 0), (3, 0)][i % 3]
            with open(os.path.join(alt, name + ".npy"), "wb") as f:
                np.lib.format.write_array(f, array, version=version)
        outs = []
        for bundle in (base, alt):
            out = os.path.join(root, "out_" + os.path.basename(bundle))
            result = ref.run_compute([bundle, "--out", out, "--heads", "3", "--mask", "padding"])
            self.assertEqual(result.returncode, 0, result.stderr)
            outs.append(ref.load_outputs(out))
        np.testing.assert_allclose(outs[0]["output"], outs[1]["output"], atol=1e-6)
        np.testing.assert_array_equal(outs[0]["mask"], outs[1]["mask"])

    def test_written_headers_are_format_1_0_aligned(self):
        out = os.path.join(ref.case_dir("compute", "headers"), "out")
        self.assertEqual(ref.run_compute(["--demo", "--out", out]).returncode, 0)
        for name in os.listdir(out):
            if not name.endswith(".npy"):
                continue
            with open(os.path.join(out, name), "rb") as f:
                self.assertEqual(np.lib.format.read_magic(f), (1, 0))
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
                self.assertFalse(fortran)
                self.assertIn(dtype, (np.dtype("<f4"), np.dtype("bool")))
                self.assertEqual(f.tell() % 64, 0, name)
        self.assertEqual(sorted(n for n in os.listdir(out)), sorted(ref.OUTPUT_FILES))

    def test_tokens_labels(self):
        root = ref.case_dir("compute", "tokens")
        case = ref.make_case(3, B=1, L=3, S=4, D=4)
        bundle = ref.write_bundle(os.path.join(root, "bundle"), case,
                                  texts={"tokens.txt": "I\nlove\ncats\n", "key_tokens.txt": "J'\naime\nles\nchats\n"})
        out = os.path.join(root, "out")
        result = ref.run_compute([bundle, "--out", out, "--heads", "2"])
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(os.path.join(out, "shapes.json")) as f:
            shapes = json.load(f)
        self.assertEqual(shapes["query_tokens"], ["I", "love", "cats"])
        self.assertEqual(shapes["key_tokens"], ["J'", "aime", "les", "chats"])


if __name__ == "__main__":
    unittest.main()
