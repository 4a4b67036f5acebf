"""`attnscope analyze` end to end: --json against a float64 NumPy reference computed from
`attnscope compute`'s probs.npy and fully_masked.npy with the same run options, the table,
--sort, rollout and flow (.npy) against NumPy / networkx references, and bad input.

Table-driven: each case runs compute and analyze with the same flags. Metrics are compared
within 1e-6 absolute (probs.npy holds the same float32 values analyze reads).
"""
import json
import os
import subprocess
import unittest

import numpy as np

import reference as ref

ATOL = 1e-6
CONTRACT_FIELDS = ["layer", "head", "batch", "entropy_bits", "max_prob", "mean_distance", "sink_mass",
                   "diag_mass", "prev_mass", "effective_keys"]


def run_analyze(args, timeout=300, tiled=False):
    """tiled: ATTNSCOPE_FULL_PATH_BYTES=1, so every run past the budget (all but a mistake or
    dropout, which need the full maps) is measured in tiles, as the app does for long maps."""
    env = dict(os.environ, ATTNSCOPE_FULL_PATH_BYTES="1") if tiled else None
    return subprocess.run([ref.BIN, "analyze"] + list(args), capture_output=True, text=True,
                          errors="backslashreplace", timeout=timeout, env=env)


def reference_metrics(probs, fully_masked, tokens=None):
    """probs: [B, H, L, S]; fully_masked: [B, L]. One dict per (head, batch), from the issue's
    definitions in float64. Rows that are flagged or sum to 0 are left out."""
    probs = probs.astype(np.float64)
    B, H, L, S = probs.shape
    i = np.arange(L)[:, None]
    j = np.arange(S)[None, :]
    out = {}
    for b in range(B):
        segment = longest_repeat(tokens[b]) if tokens is not None and L == S else None
        for h in range(H):
            p = probs[b, h]
            keep = (~fully_masked[b].astype(bool)) & (p.sum(axis=1) > 0)
            with np.errstate(divide="ignore", invalid="ignore"):
                plogp = np.where(p > 0, p * np.log2(np.where(p > 0, p, 1.0)), 0.0)
            entropy = -plogp.sum(axis=1)
            diag = np.array([p[r, r] if r < S else 0.0 for r in range(L)])
            prev = np.array([p[r, r - 1] if 1 <= r and r - 1 < S else 0.0 for r in range(L)])
            rows = np.nonzero(keep)[0]

            def mean(values, which=rows):
                return float(np.mean(values[which])) if len(which) else None

            m = {
                "entropy_bits": mean(entropy),
                "max_prob": mean(p.max(axis=1)),
                "mean_distance": mean((p * np.abs(i - j)).sum(axis=1)),
                "sink_mass": mean(p[:, 0]),
                "diag_mass": mean(diag),
                "prev_mass": mean(prev, rows[rows >= 1]),
                "effective_keys": mean(2.0 ** entropy),
                "induction": None,
            }
            if segment is not None:
                first, second, length = segment
                pairs = [(second + k, first + k + 1) for k in range(length)
                         if second + k < L and first + k + 1 < S and keep[second + k]]
                if pairs:
                    m["induction"] = float(np.mean([p[q, key] for q, key in pairs]))
            out[(h, b)] = m
    return out


def longest_repeat(tokens):
    """(first, second, length) of the longest non-overlapping repeat of >= 2 tokens, or None."""
    best = None
    n = len(tokens)
    for a in range(n):
        for b in range(a + 1, n):
            k = 0
            while b + k < n and a + k < b and tokens[a + k] == tokens[b + k]:
                k += 1
            if k >= 2 and (best is None or k > best[2]):
                best = (a, b, k)
    return best


# name, bundle sizes (None = --demo), extra bundle files, flags for both commands, tokens
CASES = [
    dict(name="demo_default", demo=True, flags=[]),
    dict(name="demo_causal_h2", demo=True, flags=["--heads", "2", "--mask", "causal"]),
    dict(name="demo_window_no_scale", demo=True, flags=["--mask", "window:1", "--scale", "none"]),
    dict(name="self_b2_padding_zero_len", sizes=dict(B=2, L=6, D=8), flags=["--heads", "2", "--mask", "causal+padding",
                                                                          "--valid-lens", "4,0"]),
    dict(name="fill_1e9_fully_masked", sizes=dict(B=2, L=5, D=8), flags=["--heads", "4", "--mask", "padding",
                                                                       "--valid-lens", "0,3", "--mask-fill", "1e9"]),
    dict(name="cross_L_gt_S", sizes=dict(B=1, L=7, S=4, D=6), flags=["--heads", "3"]),
    dict(name="cross_L_lt_S_causal_br", sizes=dict(B=2, L=3, S=8, D=8), flags=["--heads", "2", "--mask", "causal-br"]),
    dict(name="repeated_tokens_induction", sizes=dict(B=1, L=10, D=8), flags=["--heads", "2", "--mask", "causal"],
         tokens=["x", "a", "b", "c", "d", "y", "a", "b", "c", "d"]),
    dict(name="dropout_train", sizes=dict(B=1, L=6, D=8), flags=["--heads", "2", "--dropout", "0.3", "--seed", "4"]),
    dict(name="mistake_no_head_split", sizes=dict(B=1, L=6, D=8), flags=["--heads", "2", "--mistake", "no-head-split"]),
]


class AnalyzeJson(unittest.TestCase):
    def run_case(self, case, tiled=False):
        folder = ref.case_dir("analyze", case["name"])
        if case.get("demo"):
            source = ["--demo"]
        else:
            bundle = ref.write_bundle(os.path.join(folder, "bundle"), ref.make_case(7, **case["sizes"]),
                                      texts={"tokens.txt": "\n".join(case["tokens"]) + "\n"} if "tokens" in case else None)
            source = [bundle]
        out = os.path.join(folder, "compute")
        computed = ref.run_compute(source + case["flags"] + ["--out", out])
        self.assertEqual(computed.returncode, 0, computed.stderr)
        # With dropout the maps shown (and measured) are the probabilities after dropout.
        dropped = os.path.join(out, "probs_dropped.npy")
        probs = np.load(dropped if os.path.exists(dropped) else os.path.join(out, "probs.npy"))
        fully = np.load(os.path.join(out, "fully_masked.npy"))
        with open(os.path.join(out, "shapes.json")) as f:
            shapes = json.load(f)
        tokens = [shapes["query_tokens"]] * probs.shape[0]

        result = run_analyze(source + case["flags"] + ["--json"], tiled=tiled)
        self.assertEqual(result.returncode, 0, result.stderr)
        rows = json.loads(result.stdout)  # the whole of stdout is one JSON array
        self.assertIsInstance(rows, list)
        B, H = probs.shape[:2]
        self.assertEqual(len(rows), B * H)
        expected = reference_metrics(probs, fully, tokens)
        for row in rows:
            self.assertEqual(list(row)[:len(CONTRACT_FIELDS)], CONTRACT_FIELDS)
            self.assertEqual(row["layer"], 0)
            want = expected[(row["head"], row["batch"])]
            for field, value in want.items():
                with self.subTest(case=case["name"], head=row["head"], batch=row["batch"], field=field):
                    if value is None:
                        self.assertIsNone(row[field])
                    else:
                        self.assertIsNotNone(row[field])
                        self.assertAlmostEqual(row[field], value, delta=ATOL * max(1.0, abs(value)))
        return rows, expected

    def test_cases(self):
        for case in CASES:
            with self.subTest(case=case["name"]):
                rows, expected = self.run_case(case)
                if case["name"] == "repeated_tokens_induction":
                    self.assertTrue(all(r["induction"] is not None for r in rows))
                if case["name"] == "self_b2_padding_zero_len":
                    # batch item 1 has no key: every metric is null there
                    self.assertTrue(all(r["entropy_bits"] is None for r in rows if r["batch"] == 1))

    def test_cases_measured_in_tiles(self):
        """The same cases through the tiled path (the head metrics measured in the overview's
        pass over the real maps): the same numbers against the same reference."""
        for case in CASES:
            with self.subTest(case=case["name"]):
                rows, _ = self.run_case(case, tiled=True)
                if case["name"] == "repeated_tokens_induction":
                    self.assertTrue(all(r["induction"] is not None for r in rows))
        table = run_analyze(["--demo", "--heads", "2"], tiled=True)
        self.assertEqual(table.returncode, 0, table.stderr)
        self.assertIn("note: measured in tiles", table.stdout)
        refused = run_analyze(["--demo", "--rollout", "--out", os.path.join(ref.case_dir("analyze", "tiled_rollout"), "o")],
                              tiled=True)
        self.assertEqual(refused.returncode, 1)
        self.assertEqual(refused.stderr.strip().splitlines(),
                         ["attnscope analyze: --rollout / --flow need the full maps; this run is measured in tiles "
                          "(L=10, S=10, H=4)"])

    def test_sort_orders_rows(self):
        result = run_analyze(["--demo", "--heads", "4", "--json", "--sort", "sink_mass"])
        self.assertEqual(result.returncode, 0, result.stderr)
        sinks = [r["sink_mass"] for r in json.loads(result.stdout)]
        self.assertEqual(sinks, sorted(sinks, reverse=True))
        result = run_analyze(["--demo", "--heads", "4", "--json", "--sort", "entropy_bits:asc"])
        entropies = [r["entropy_bits"] for r in json.loads(result.stdout)]
        self.assertEqual(entropies, sorted(entropies))

    def test_table_lists_every_head_and_the_groups(self):
        result = run_analyze(["--demo", "--heads", "4", "--mask", "causal"])
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = result.stdout.splitlines()
        header = next(k for k, line in enumerate(lines) if line.split()[:3] == ["layer", "head", "batch"])
        for word in ("entropy", "max p", "distance", "sink", "diag", "prev", "eff. keys", "induction", "group"):
            self.assertIn(word, lines[header])
        body = [line.split() for line in lines[header + 1:header + 5]]
        self.assertEqual([row[:3] for row in body], [["0", str(h), "0"] for h in range(4)])
        self.assertIn("Groups:", result.stdout)
        # The table's numbers are the JSON's, rounded to 4 decimals.
        rows = json.loads(run_analyze(["--demo", "--heads", "4", "--mask", "causal", "--json"]).stdout)
        for row, line in zip(rows, body):
            self.assertAlmostEqual(float(line[3]), row["entropy_bits"], delta=6e-5)


def reference_rollout_flow(maps):
    """maps: [layers, B, H, L, L] -> rollout, flow [layers, B, L, L] (Abnar and Zuidema 2020),
    flow with networkx's Edmonds-Karp maximum flow like the paper's code."""
    import networkx as nx
    maps = maps.astype(np.float64)
    layers, B, H, L, _ = maps.shape
    eye = np.eye(L)
    residual = 0.5 * maps.mean(axis=2) + 0.5 * eye
    residual /= residual.sum(axis=-1, keepdims=True)
    rollout = np.zeros((layers, B, L, L))
    flow = np.zeros((layers, B, L, L))
    for b in range(B):
        acc = eye
        graph = nx.DiGraph()
        for layer in range(layers):
            acc = residual[layer, b] @ acc
            rollout[layer, b] = acc
            for p in range(L):
                for q in range(L):
                    graph.add_edge((layer + 1, p), (layer, q), capacity=residual[layer, b, p, q])
            for p in range(L):
                row = np.array([nx.maximum_flow_value(graph, (layer + 1, p), (0, q),
                                                      flow_func=nx.algorithms.flow.edmonds_karp)
                                for q in range(L)])
                flow[layer, b, p] = row / row.sum()
    return rollout, flow


class AnalyzeModel(unittest.TestCase):
    """MODEL --text: every layer of a trained model folder (a random 3-layer model written by
    the model tests' helper), against attentions.npy from `attnscope model run`."""

    @classmethod
    def setUpClass(cls):
        import model_reference
        cls.folder = ref.case_dir("analyze", "model3")
        cls.model = os.path.join(cls.folder, "model")
        model_reference.write_random_model(cls.model, D=24, H=3, N=3, T=24, seed=11)
        cls.text = "abcd efgh abcd efgh"
        out = os.path.join(cls.folder, "run")
        result = subprocess.run([ref.BIN, "model", "run", cls.model, "--text", cls.text, "--out", out],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        cls.attentions = np.load(os.path.join(out, "attentions.npy"))  # [3, 1, H, L, L]

    def test_json_every_layer_against_reference(self):
        result = run_analyze([self.model, "--text", self.text, "--json"])
        self.assertEqual(result.returncode, 0, result.stderr)
        rows = json.loads(result.stdout)
        layers, B, H, L, _ = self.attentions.shape
        self.assertEqual(len(rows), layers * B * H)
        tokens = [list(self.text)]
        for row in rows:
            want = reference_metrics(self.attentions[row["layer"]], np.zeros((B, L), bool), tokens)[(row["head"], row["batch"])]
            for field, value in want.items():
                with self.subTest(layer=row["layer"], head=row["head"], field=field):
                    self.assertIsNotNone(value)  # the text repeats "abcd efgh": induction is defined
                    self.assertAlmostEqual(row[field], value, delta=ATOL)

    def test_rollout_and_flow_three_layers(self):
        out = os.path.join(self.folder, "across")
        result = run_analyze([self.model, "--text", self.text, "--rollout", "--flow", "--out", out])
        self.assertEqual(result.returncode, 0, result.stderr)
        rollout = np.load(os.path.join(out, "rollout.npy"))
        flow = np.load(os.path.join(out, "flow.npy"))
        want_rollout, want_flow = reference_rollout_flow(self.attentions)
        self.assertEqual(rollout.shape, (3, 1, len(self.text), len(self.text)))
        np.testing.assert_allclose(rollout, want_rollout, atol=1e-6)
        np.testing.assert_allclose(flow, want_flow, atol=1e-5)
        # Three layers mix more than one: rollout after layer 2 differs from layer 0's matrix.
        self.assertGreater(np.abs(rollout[2] - rollout[0]).max(), 1e-3)

    def test_attention_bundle_gives_the_same_rows(self):
        """The same maps saved as an attention bundle (attentions.npy + tokens.txt)."""
        bundle = os.path.join(self.folder, "attention_bundle")
        os.makedirs(bundle, exist_ok=True)
        np.save(os.path.join(bundle, "attentions.npy"), self.attentions)
        with open(os.path.join(bundle, "tokens.txt"), "w") as f:
            f.write("\n".join(self.text) + "\n")
        from_bundle = run_analyze([bundle, "--json"])
        self.assertEqual(from_bundle.returncode, 0, from_bundle.stderr)
        from_model = run_analyze([self.model, "--text", self.text, "--json"])
        a, b = json.loads(from_bundle.stdout), json.loads(from_model.stdout)
        self.assertEqual(len(a), len(b))
        for x, y in zip(a, b):
            for field in CONTRACT_FIELDS + ["induction"]:
                self.assertAlmostEqual(x[field], y[field], delta=1e-9, msg=field)
        result = run_analyze([bundle, "--heads", "2"])
        self.assertEqual(result.returncode, 2)
        self.assertIn("do not apply", result.stderr)

    def test_model_errors(self):
        result = run_analyze([self.model, "--text", self.text, "--heads", "2"])
        self.assertEqual(result.returncode, 2)
        self.assertIn("do not apply", result.stderr)
        result = run_analyze([self.model, "--text", "x" * 40])
        self.assertEqual(result.returncode, 1)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
        result = run_analyze([os.path.join(self.folder, "nope"), "--text", "ab"])
        self.assertEqual(result.returncode, 1)
        self.assertIn("nope", result.stderr)


class AnalyzeAcrossLayers(unittest.TestCase):
    def test_rollout_and_flow_one_layer_demo(self):
        folder = ref.case_dir("analyze", "rollout_demo")
        computed = ref.run_compute(["--demo", "--mask", "causal", "--out", os.path.join(folder, "c")])
        self.assertEqual(computed.returncode, 0, computed.stderr)
        probs = np.load(os.path.join(folder, "c", "probs.npy"))
        result = run_analyze(["--demo", "--mask", "causal", "--rollout", "--flow", "--out", folder, "--json"])
        self.assertEqual(result.returncode, 0, result.stderr)
        json.loads(result.stdout)  # stdout stays one JSON array
        rollout = np.load(os.path.join(folder, "rollout.npy"))
        flow = np.load(os.path.join(folder, "flow.npy"))
        want_rollout, want_flow = reference_rollout_flow(probs[None])
        self.assertEqual(rollout.shape, want_rollout.shape)
        np.testing.assert_allclose(rollout, want_rollout, atol=1e-6)
        np.testing.assert_allclose(flow, want_flow, atol=1e-6)

    def test_usage_errors(self):
        for args, message in (
                (["--demo", "--rollout"], "--rollout and --flow need --out"),
                (["--demo", "--out", "x"], "--out is only used with --rollout or --flow"),
                (["--demo", "--sort", "nope"], "unknown metric 'nope'"),
                (["--demo", "--sort", "max_prob:up"], "'up' is not asc or desc"),
                (["--demo", "--min-correlation", "2"], "--min-correlation"),
                ([], "give a BUNDLE folder or --demo"),
                (["--demo", "--heads", "0"], "--heads"),
        ):
            with self.subTest(args=args):
                result = run_analyze(args)
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
                self.assertIn(message, result.stderr)

    def test_bad_input(self):
        missing = os.path.join(ref.case_dir("analyze", "bad_input"), "missing")
        result = run_analyze([missing, "--json"])
        self.assertEqual(result.returncode, 1)
        self.assertEqual(result.stdout, "")
        self.assertIn("missing", result.stderr)
        result = run_analyze(["--demo", "--heads", "3"])  # D = 3 * 16 is fine for the demo: use a bundle
        self.assertEqual(result.returncode, 0, result.stderr)
        bundle = ref.write_bundle(os.path.join(ref.case_dir("analyze", "bad_heads"), "b"),
                                  ref.make_case(1, B=1, L=4, D=8))
        result = run_analyze([bundle, "--heads", "3", "--json"])
        self.assertEqual(result.returncode, 1)
        self.assertIn("does not divide", result.stderr)
        self.assertEqual(result.stdout, "")


if __name__ == "__main__":
    unittest.main()
