"""Attention bundles (maps computed elsewhere) through `attnscope export`: the round trip
is bit for bit for .npy, .npz, compressed .npz, float16 and float64 input; the layer x head
atlas; rows that are not distributions warn; tokens.json labels every batch item (labels,
or raw pieces labelled by the tokenizer's rules) and attention_mask.npy / query_mask.npy
mask padding; bad inputs exit 1 with one line naming the file and write nothing.

Environment: ATTNSCOPE_BIN (the binary), ATTNSCOPE_TEST_TMP (scratch folder).
"""
import json
import os
import struct
import subprocess
import unittest
import zipfile

import numpy as np

import reference as ref

LAYERS, B, H, L, S = 3, 2, 4, 5, 6


def random_maps(seed, shape=(LAYERS, B, H, L, S)):
    """Softmax rows of random scores: [layers, B, H, L, S] float64."""
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal(shape) * 2.0
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def write_attention_bundle(path, maps, container="npy", tokens=True, key_tokens=True, meta=None):
    """maps saved as attentions.npy, or under "attentions" in attentions.npz ("npz" / "npz_compressed")."""
    os.makedirs(path, exist_ok=True)
    if container == "npy":
        np.save(os.path.join(path, "attentions.npy"), maps)
    else:
        save = np.savez_compressed if container == "npz_compressed" else np.savez
        save(os.path.join(path, "attentions.npz"), attentions=maps)
    L_, S_ = maps.shape[-2], maps.shape[-1]
    if tokens:
        with open(os.path.join(path, "tokens.txt"), "w") as f:
            f.write("".join(f"q{i}\n" for i in range(L_)))
    if key_tokens:
        with open(os.path.join(path, "key_tokens.txt"), "w") as f:
            f.write("".join(f"k{j}\n" for j in range(S_)))
    if meta is not None:
        with open(os.path.join(path, "bundle.json"), "w") as f:
            json.dump(meta, f)
    return path


def run(*args):
    return subprocess.run([ref.BIN, *args], capture_output=True, text=True, timeout=300)


class ImportRoundTripTest(unittest.TestCase):
    def test_probs_npy_equals_the_input_slice_bit_for_bit(self):
        maps = random_maps(1)
        cases = [  # (name, container, dtype)
            ("npy_float32", "npy", np.float32),
            ("npz_float32", "npz", np.float32),
            ("npz_compressed_float32", "npz_compressed", np.float32),
            ("npy_float16", "npy", np.float16),
            ("npz_compressed_float16", "npz_compressed", np.float16),
            ("npy_float64", "npy", np.float64),
        ]
        for name, container, dtype in cases:
            with self.subTest(case=name):
                tmp = ref.case_dir("import", name)
                stored = maps.astype(dtype)
                bundle = write_attention_bundle(os.path.join(tmp, "bundle"), stored, container)
                out = os.path.join(tmp, "out")
                proc = run("export", bundle, "--what", "probs", "--layers", "1", "--heads", "2", "--batch", "0",
                           "--format", "npy", "--out", out)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertEqual(proc.stderr, "")
                base = os.path.join(out, f"probs_L1_H2_b0_imported_L{L}xS{S}")
                self.assertEqual(proc.stdout.split(), [base + ".npy", base + ".json"])
                got = np.load(base + ".npy")
                want = stored[1, 0, 2].astype(np.float32)  # float16/64 -> float32 exactly as NumPy rounds
                self.assertEqual(got.dtype, np.float32)
                self.assertEqual(got.shape, (L, S))
                self.assertEqual(got.tobytes(), want.tobytes())
                # The JSON beside it reopens the same bundle.
                with open(base + ".json") as f:
                    settings = json.load(f)
                self.assertEqual((settings["source"], settings["bundle_path"]), ("bundle", bundle))

    def test_one_layer_bundle_and_every_layer_and_head(self):
        tmp = ref.case_dir("import", "one_layer")
        maps = random_maps(2, (B, H, L, L)).astype(np.float32)  # [B, H, L, S], S == L
        bundle = write_attention_bundle(os.path.join(tmp, "bundle"), maps, key_tokens=False)
        out = os.path.join(tmp, "out")
        proc = run("export", bundle, "--heads", "all", "--batch", "1", "--format", "npy,csv", "--out", out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for h in range(H):
            base = os.path.join(out, f"probs_L0_H{h}_b1_imported_L{L}xS{L}")
            self.assertEqual(np.load(base + ".npy").tobytes(), maps[1, h].tobytes())
            with open(base + ".csv") as f:
                header = f.readline().strip().split(",")
            self.assertEqual(header, ["query\\key"] + [f"q{j}" for j in range(L)])  # tokens.txt serves keys

    def test_grid_is_the_layer_by_head_atlas(self):
        tmp = ref.case_dir("import", "atlas")
        maps = random_maps(3).astype(np.float32)
        bundle = write_attention_bundle(os.path.join(tmp, "bundle"), maps,
                                        meta={"model": "toy", "layer_names": ["enc.0", "enc.1", "enc.2"]})
        out = os.path.join(tmp, "out")
        proc = run("export", bundle, "--what", "grid", "--batch", "1", "--format", "npy,png,svg", "--out", out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        base = os.path.join(out, f"grid_b1_imported_L{L}xS{S}")
        atlas = np.load(base + ".npy")
        self.assertEqual(atlas.shape, (LAYERS * H, L, S))  # tiles row-major: layer, then head
        self.assertEqual(atlas.tobytes(), maps[:, 1].reshape(LAYERS * H, L, S).tobytes())
        with open(base + ".svg") as f:
            svg = f.read()
        for layer in range(LAYERS):  # tiles titled with the bundle's layer names, as the app names its rows
            for h in range(H):
                self.assertIn(f">enc.{layer} H{h}</text>", svg)
        # Without layer names: "L0 H0".
        unnamed = write_attention_bundle(os.path.join(tmp, "unnamed"), maps)
        proc = run("export", unnamed, "--what", "grid", "--format", "svg", "--out", os.path.join(tmp, "out_unnamed"))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(os.path.join(tmp, "out_unnamed", f"grid_b0_imported_L{L}xS{S}.svg")) as f:
            svg = f.read()
        for layer in range(LAYERS):
            for h in range(H):
                self.assertIn(f">L{layer} H{h}</text>", svg)
        # A subset of layers names them.
        proc = run("export", bundle, "--what", "grid", "--layers", "0,2", "--format", "npy", "--out", out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        subset = np.load(os.path.join(out, f"grid_L0,2_b0_imported_L{L}xS{S}.npy"))
        self.assertEqual(subset.tobytes(), maps[[0, 2], 0].reshape(2 * H, L, S).tobytes())

    def test_grid_picture_capped_at_4096_px_unless_full_resolution(self):
        # 2 layers x 20 heads of 220 tokens: 9305 px wide at the default 2 px per cell.
        tmp = ref.case_dir("import", "atlas_cap")
        maps = random_maps(7, shape=(2, 1, 20, 220, 220)).astype(np.float32)
        bundle = write_attention_bundle(os.path.join(tmp, "bundle"), maps, key_tokens=False)
        sizes = {}
        for name, flags in (("capped", ()), ("full", ("--full-resolution",))):
            out = os.path.join(tmp, name)
            proc = run("export", bundle, "--what", "grid", "--format", "png,npy", "--out", out, *flags)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            base = os.path.join(out, "grid_b0_imported_L220xS220")
            with open(base + ".png", "rb") as f:
                sizes[name] = struct.unpack(">II", f.read(24)[16:24])
            self.assertEqual(np.load(base + ".npy").tobytes(), maps[:, 0].reshape(40, 220, 220).tobytes())
        self.assertLessEqual(max(sizes["capped"]), 4096)
        self.assertGreater(sizes["capped"][0], 2000)
        self.assertGreater(max(sizes["full"]), 4096)
        self.assertGreaterEqual(sizes["full"][0], 20 * 220)

    def test_rows_that_are_not_distributions_export_with_one_warning(self):
        tmp = ref.case_dir("import", "not_distributions")
        maps = random_maps(4).astype(np.float32)
        maps[2, 1, 3, 4] *= 1.5   # a row summing to 1.5
        maps[0, 0, 1, 0, 0] = -0.25  # a negative value
        bundle = write_attention_bundle(os.path.join(tmp, "bundle"), maps)
        proc = run("export", bundle, "--layers", "2", "--heads", "3", "--batch", "1", "--format", "npy",
                   "--out", os.path.join(tmp, "out"))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        lines = proc.stderr.strip().split("\n")
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertIn("attentions.npy: 2 of %d rows are not probability distributions" % (LAYERS * B * H * L), lines[0])
        self.assertIn("[0, 0, 1, 0]", lines[0])
        np.testing.assert_array_equal(np.load(proc.stdout.split()[0]), maps[2, 1, 3])


def write_json(path, doc):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False)


class TokensJsonAndPaddingTest(unittest.TestCase):
    def test_every_item_has_its_own_labels(self):
        """Labels per item; raw pieces labelled as the tokenizer labels them (table-driven)."""
        maps = random_maps(7, (1, 2, 2, 3, 3)).astype(np.float32)
        cases = [  # (name, tokens.json document, labels of item 0, labels of item 1)
            ("labels", {"query": [["a", "b", "c"], ["x", "y", "z"]]}, ["a", "b", "c"], ["x", "y", "z"]),
            ("list_of_rows", [["a", "b", "c"], ["x", "y", "z"]], ["a", "b", "c"], ["x", "y", "z"]),
            ("one_row_for_all", {"query": [["a", "b", "c"]]}, ["a", "b", "c"], ["a", "b", "c"]),
            ("byte_level", {"piece_style": "byte_level", "query": [
                [{"token": "Ġcat", "id": 3}, {"token": "Ċ", "id": 4}, {"token": "Ð¿", "id": 5}],
                [{"token": "<s>", "id": 0, "special": True}, {"token": "ĠÎ±", "id": 6},
                 {"token": "x", "label": "mine"}]]},
             ["\u2423cat", "\u21b5", "\u043f"], ["<s>", "\u2423\u03b1", "mine"]),
            ("plain", {"query": [
                [{"token": "\u2581the"}, {"token": "<0xE0>"}, {"token": "<0xA4>"}],
                [{"token": "<0xE0>"}, {"token": "<0xA4>"}, {"token": "<0xB9>"}]]},
             ["\u2423the", "<0xE0>", "<0xA4>"], ["\u0939", "\u00b7", "\u00b7"]),
        ]
        for name, doc, want0, want1 in cases:
            with self.subTest(case=name):
                tmp = ref.case_dir("import_tokens_json", name)
                bundle = write_attention_bundle(os.path.join(tmp, "bundle"), maps, tokens=False, key_tokens=False)
                write_json(os.path.join(bundle, "tokens.json"), doc)
                for b, want in ((0, want0), (1, want1)):
                    queries, keys = ref.csv_axes(ref.export_map(bundle, os.path.join(tmp, "out"), "probs", "csv", b, head=1))
                    self.assertEqual((queries, keys), (want, want))

    def test_cross_attention_keys_and_padding(self):
        """key rows for S != L; attention_mask [B, S] masks padded keys, query_mask [B, L]
        padded queries; probabilities stay as stored; an old bundle (tokens.txt) still loads."""
        L_, S_ = 3, 4
        maps = random_maps(8, (2, 2, 2, L_, S_)).astype(np.float32)
        key_mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0]])
        query_mask = np.array([[1, 1, 1], [1, 0, 0]], dtype=bool)
        tmp = ref.case_dir("import_tokens_json", "cross")
        bundle = write_attention_bundle(os.path.join(tmp, "bundle"), maps, tokens=False, key_tokens=False)
        write_json(os.path.join(bundle, "tokens.json"), {"query": [["q0", "q1", "q2"], ["r0", "r1", "r2"]],
                                                         "key": [["k0", "k1", "k2", "k3"], ["m0", "m1", "m2", "m3"]]})
        np.save(os.path.join(bundle, "attention_mask.npy"), key_mask)
        np.save(os.path.join(bundle, "query_mask.npy"), query_mask)
        out = os.path.join(tmp, "out")
        for b in range(2):
            self.assertEqual(ref.csv_axes(ref.export_map(bundle, out, "probs", "csv", b, head=1)),
                             ([["q0", "q1", "q2"], ["r0", "r1", "r2"]][b], [["k0", "k1", "k2", "k3"],
                                                                            ["m0", "m1", "m2", "m3"]][b]))
            allowed = np.load(ref.export_map(bundle, out, "mask", "npy", b)) == 1
            np.testing.assert_array_equal(allowed, query_mask[b][:, None] & (key_mask[b][None, :] == 1))
            self.assertEqual(np.load(ref.export_map(bundle, out, "probs", "npy", b, head=1)).tobytes(), maps[0, b, 1].tobytes())
        # Self-attention: attention_mask alone masks padded keys and the padded query rows.
        self_maps = random_maps(9, (1, 2, 2, 3, 3)).astype(np.float32)
        old = write_attention_bundle(os.path.join(tmp, "old"), self_maps, key_tokens=False)  # tokens.txt
        np.save(os.path.join(old, "attention_mask.npy"), np.array([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]]))
        allowed = np.load(ref.export_map(old, out, "mask", "npy", 1)) == 1
        np.testing.assert_array_equal(allowed, [[1, 1, 0], [1, 1, 0], [0, 0, 0]])
        self.assertEqual(ref.csv_axes(ref.export_map(old, out, "probs", "csv", 1)), (["q0", "q1", "q2"], ["q0", "q1", "q2"]))

    def test_bad_token_files_and_masks(self):
        maps = random_maps(10, (1, 2, 2, 3, 3)).astype(np.float32)
        cases = [  # (name, files {name: content}, needles)
            ("both_token_files", {"tokens.json": [["a", "b", "c"]], "tokens.txt": "a\nb\nc\n"},
             ["tokens.json and tokens.txt", "keep one"]),
            ("short_row", {"tokens.json": {"query": [["a", "b"]]}}, ["tokens.json: query[0] has 2 tokens", "L = 3"]),
            ("three_rows", {"tokens.json": {"query": [["a", "b", "c"]] * 3}}, ["tokens.json: query", "B = 2"]),
            ("no_query", {"tokens.json": {"key": [["a", "b", "c"]]}}, ["tokens.json: no \"query\" rows"]),
            ("bad_entry", {"tokens.json": {"query": [["a", 5, "c"]]}}, ["tokens.json: query[0][1]", "\"token\""]),
            ("bad_id", {"tokens.json": {"query": [["a", {"token": "b", "id": "7"}, "c"]]}},
             ["tokens.json: query[0][1]", "\"id\""]),
            ("bad_style", {"tokens.json": {"piece_style": "bytes", "query": [["a", "b", "c"]]}},
             ["tokens.json", "unknown piece style 'bytes'", "byte_level"]),
            ("not_json", {"tokens.json": "{"}, ["tokens.json: not valid JSON"]),
            ("mask_shape", {"attention_mask.npy": np.ones((2, 4))}, ["attention_mask.npy", "[B, S] = [2, 3]"]),
            ("mask_values", {"attention_mask.npy": np.array([[1, 1, 2], [1, 0, 0]])},
             ["attention_mask.npy", "expected 0 (padding) or 1", "[0, 2]"]),
            ("query_mask_shape", {"query_mask.npy": np.ones((2,))}, ["query_mask.npy", "[B, L] = [2, 3]"]),
        ]
        for name, files, needles in cases:
            with self.subTest(case=name):
                tmp = ref.case_dir("import_tokens_json_errors", name)
                bundle = write_attention_bundle(os.path.join(tmp, "bundle"), maps, tokens=False, key_tokens=False)
                for file_name, content in files.items():
                    path = os.path.join(bundle, file_name)
                    if isinstance(content, np.ndarray):
                        np.save(path, content)
                    elif isinstance(content, str):
                        with open(path, "w") as f:
                            f.write(content)
                    else:
                        write_json(path, content)
                ImportErrorTest.assert_refused(self, name, bundle, needles)


class ImportErrorTest(unittest.TestCase):
    def assert_refused(self, name, bundle, needles, *flags):
        """exit 1, one stderr line holding every needle, nothing in the output folder."""
        out = os.path.join(os.path.dirname(bundle), "out")
        proc = run("export", bundle, "--format", "npy,png", "--out", out, *flags)
        self.assertEqual(proc.returncode, 1, f"{name}: {proc.stderr}")
        self.assertEqual(proc.stdout, "")
        lines = proc.stderr.strip().split("\n")
        self.assertEqual(len(lines), 1, proc.stderr)
        for needle in needles:
            self.assertIn(needle, lines[0], name)
        self.assertFalse(os.path.exists(out) and os.listdir(out), f"{name}: files written")

    def test_bad_bundles(self):
        good = random_maps(5).astype(np.float32)

        def nan_maps():
            m = good.copy()
            m[1, 0, 2, 3, 4] = np.nan
            return m

        def inf_maps():
            m = good.copy()
            m[2, 1, 0, 0, 1] = np.inf
            return m

        cases = [  # (name, maps, container, tokens text or None, extra flags, needles)
            ("rank3", good[0, 0], "npy", None, [], ["attentions.npy", "expected [layers, B, H, L, S] or [B, H, L, S]"]),
            ("rank6", good[None], "npy", None, [], ["attentions.npy", "[1, 3, 2, 4, 5, 6]"]),
            ("tokens_count", good, "npy", "a\nb\nc\n", [], ["tokens.txt", "3 labels", "L = 5"]),
            ("layer_out_of_range", good, "npy", None, ["--layers", "3"], ["--layers", "layer 3 is out of range", "3 layers"]),
            ("head_out_of_range", good, "npz", None, ["--heads", "4"], ["--heads", "head 4 is out of range"]),
            ("batch_out_of_range", good, "npy", None, ["--batch", "2"], ["--batch", "item 2"]),
            ("nan", nan_maps(), "npy", None, [], ["attentions.npy", "NaN at index [1, 0, 2, 3, 4]"]),
            ("inf_npz", inf_maps(), "npz_compressed", None, [], ["attentions.npz", "Inf at index [2, 1, 0, 0, 1]"]),
            ("scores_of_imported", good, "npy", None, ["--what", "scores"], ["probabilities only"]),
        ]
        for name, maps, container, tokens, flags, needles in cases:
            with self.subTest(case=name):
                tmp = ref.case_dir("import_errors", name)
                bundle = write_attention_bundle(os.path.join(tmp, "bundle"), maps, container, key_tokens=False)
                if tokens is not None:
                    with open(os.path.join(bundle, "tokens.txt"), "w") as f:
                        f.write(tokens)
                self.assert_refused(name, bundle, needles, *flags)

    def test_endless_token_file(self):
        # Regression (issue 12): a key_tokens.txt that never ends (a link to /dev/zero) was read
        # until memory ran out.
        bundle = write_attention_bundle(os.path.join(ref.case_dir("import_errors", "endless"), "bundle"),
                                        random_maps(6).astype(np.float32))
        os.remove(os.path.join(bundle, "key_tokens.txt"))
        os.symlink("/dev/zero", os.path.join(bundle, "key_tokens.txt"))
        self.assert_refused("endless", bundle, ["key_tokens.txt: larger than 64 MiB, not a token list"])

    def test_broken_archives(self):
        maps = random_maps(6).astype(np.float32)
        for name in ("truncated", "corrupt_compressed", "corrupt_stored", "no_attentions", "not_zip"):
            with self.subTest(case=name):
                tmp = ref.case_dir("import_errors", name)
                bundle = os.path.join(tmp, "bundle")
                os.makedirs(bundle)
                path = os.path.join(bundle, "attentions.npz")
                if name == "no_attentions":
                    np.savez(path, weights=maps)
                    needles = ["attentions.npz", "no array named 'attentions'"]
                elif name == "not_zip":
                    with open(path, "wb") as f:
                        f.write(b"this is not a zip archive at all" * 10)
                    needles = ["attentions.npz", "not a readable .npz archive"]
                else:
                    (np.savez if name == "corrupt_stored" else np.savez_compressed)(path, attentions=maps)
                    with open(path, "rb") as f:
                        data = bytearray(f.read())
                    if name == "truncated":
                        data = data[: len(data) // 2]
                        needles = ["attentions.npz"]
                    else:
                        # Flip bytes inside the member's data (after its local header and the
                        # .npy header): the CRC (or inflate) check must refuse it.
                        with zipfile.ZipFile(path) as z:
                            info = z.getinfo("attentions.npy")
                        start = info.header_offset + 30 + len(info.filename) + len(info.extra) + 200
                        for k in range(start, start + 16):
                            data[k] ^= 0x5A
                        needles = ["attentions.npz", "attentions.npy", "corrupt"]
                    with open(path, "wb") as f:
                        f.write(bytes(data))
                self.assert_refused(name, bundle, needles)

    def test_both_kinds_in_one_folder_and_compute_on_maps(self):
        tmp = ref.case_dir("import_errors", "both")
        bundle = write_attention_bundle(os.path.join(tmp, "bundle"), random_maps(7).astype(np.float32))
        np.save(os.path.join(bundle, "query.npy"), np.ones((1, L, 8), np.float32))
        self.assert_refused("both", bundle, ["holds both", "query.npy"])
        os.remove(os.path.join(bundle, "query.npy"))
        proc = run("compute", bundle, "--out", os.path.join(tmp, "computed"))
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("attention maps computed elsewhere", proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(tmp, "computed")))


if __name__ == "__main__":
    unittest.main()
