"""`attnscope compute` on bad input: exit 1 (bad input) or 2 (usage), exactly one line on
stderr naming the file and the problem, and nothing left in --out (not even temp files)."""
import os
import shutil
import struct
import unittest

import numpy as np

import reference as ref


def read_all(folder):
    contents = {}
    for name in os.listdir(folder):
        with open(os.path.join(folder, name), "rb") as f:
            contents[name] = f.read()
    return contents


def good_bundle(root, **overrides):
    """A valid cross-attention bundle B=2, L=4, S=6, Dq=8, Dk=5, Dv=3, D=8; overrides
    replace (or with None remove) arrays."""
    case = ref.make_case(1, B=2, L=4, S=6, D=8, Dk=5, Dv=3)
    for name, array in overrides.items():
        if array is None:
            case.pop(name, None)
        else:
            case[name] = array
    return ref.write_bundle(os.path.join(root, "bundle"), case)


def npy_bytes(array, version=(1, 0)):
    import io
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array, version=version)
    return buf.getvalue()


def raw_npy(header_dict, payload=b"", version=1):
    """A hand-made .npy file with an arbitrary header text."""
    header = header_dict.encode("latin1")
    pre = b"\x93NUMPY" + bytes([version, 0])
    pad = 64 - (len(pre) + (2 if version == 1 else 4) + len(header) + 1) % 64
    header += b" " * (pad % 64) + b"\n"
    size = struct.pack("<H" if version == 1 else "<I", len(header))
    return pre + size + header + payload


class BadInput(unittest.TestCase):
    def check(self, root, args, code, *needles, out=None):
        out = out or os.path.join(root, "out")
        result = ref.run_compute(list(args) + ["--out", out])
        self.assertEqual(result.returncode, code, "stdout: %s\nstderr: %s" % (result.stdout, result.stderr))
        lines = result.stderr.splitlines()
        self.assertEqual(len(lines), 1, "want one line on stderr, got: %r" % result.stderr)
        self.assertTrue(result.stderr.endswith("\n"))
        for needle in needles:
            self.assertIn(needle, lines[0])
        if os.path.isdir(out):
            self.assertEqual(os.listdir(out), [], "a failed run left files in --out")
        self.assertNotIn("Traceback", result.stderr)
        return lines[0]

    def write(self, bundle, name, data):
        with open(os.path.join(bundle, name), "wb") as f:
            f.write(data)

    # ---- the .npy files themselves

    def test_bad_magic(self):
        root = ref.case_dir("compute_errors", "bad_magic")
        bundle = good_bundle(root)
        self.write(bundle, "query.npy", b"PK\x03\x04 this is a zip, not npy" * 4)
        self.check(root, [bundle], 1, "query.npy", "bad magic")

    def test_empty_file(self):
        root = ref.case_dir("compute_errors", "empty_file")
        bundle = good_bundle(root)
        self.write(bundle, "key.npy", b"")
        self.check(root, [bundle], 1, "key.npy", "not a .npy file")

    def test_unsupported_version(self):
        root = ref.case_dir("compute_errors", "bad_version")
        bundle = good_bundle(root)
        data = bytearray(npy_bytes(np.zeros((2, 4, 8), np.float32)))
        data[6] = 4
        self.write(bundle, "query.npy", bytes(data))
        self.check(root, [bundle], 1, "query.npy", "unsupported .npy format version 4.0")

    def test_malformed_header(self):
        root = ref.case_dir("compute_errors", "bad_header")
        bundle = good_bundle(root)
        self.write(bundle, "query.npy", raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4, 8 }",
                                                b"\0" * 256))
        self.check(root, [bundle], 1, "query.npy", "malformed .npy header")

    def test_fortran_order(self):
        root = ref.case_dir("compute_errors", "fortran")
        bundle = good_bundle(root)
        np.save(os.path.join(bundle, "w_q.npy"), np.asfortranarray(np.ones((8, 8), np.float32) * 0.1))
        self.check(root, [bundle], 1, "w_q.npy", "Fortran order")

    def test_big_endian(self):
        root = ref.case_dir("compute_errors", "big_endian")
        bundle = good_bundle(root)
        np.save(os.path.join(bundle, "query.npy"), np.ones((2, 4, 8), dtype=">f4"))
        self.check(root, [bundle], 1, "query.npy", "big-endian")

    def test_unsupported_dtype(self):
        root = ref.case_dir("compute_errors", "complex64")
        bundle = good_bundle(root)
        np.save(os.path.join(bundle, "value.npy"), np.ones((2, 6, 3), dtype=np.complex64))
        self.check(root, [bundle], 1, "value.npy", "unsupported dtype '<c8'")

    def test_wrong_dtype_for_role(self):
        for name, array, needle in (
                ("query", np.ones((2, 4, 8), dtype=np.int64), "expected float16, float32 or float64"),
                ("attn_mask", np.ones((4, 6), dtype=np.float32), "expected bool"),
                ("key_padding", np.ones((2, 6), dtype=np.int32), "expected bool"),
                ("valid_lens", np.array([3.0, 2.0]), "expected int32 or int64")):
            with self.subTest(name=name):
                root = ref.case_dir("compute_errors", "dtype_" + name)
                bundle = good_bundle(root)
                np.save(os.path.join(bundle, name + ".npy"), array)
                self.check(root, [bundle], 1, name + ".npy", needle)

    def test_truncated_data(self):
        root = ref.case_dir("compute_errors", "truncated")
        bundle = good_bundle(root)
        data = npy_bytes(np.ones((2, 6, 5), np.float32))
        self.write(bundle, "key.npy", data[:-7])
        self.check(root, [bundle], 1, "key.npy", "truncated")

    def test_truncated_header(self):
        root = ref.case_dir("compute_errors", "truncated_header")
        bundle = good_bundle(root)
        self.write(bundle, "key.npy", npy_bytes(np.ones((2, 6, 5), np.float32))[:40])
        self.check(root, [bundle], 1, "key.npy", "truncated")

    def test_header_declares_more_than_file_holds(self):
        root = ref.case_dir("compute_errors", "huge_header")
        bundle = good_bundle(root)
        # 10^18 elements declared (and one product that overflows 64 bits), 64 bytes present.
        for shape in ("(1000000, 1000000, 1000000)", "(4294967296, 4294967296, 4294967296)"):
            with self.subTest(shape=shape):
                self.write(bundle, "query.npy",
                           raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape, b"\0" * 64))
                self.check(root, [bundle], 1, "query.npy", "header declares shape", "holds only 64 data bytes")

    def test_nan_and_inf(self):
        for name, value, word in (("query", np.nan, "NaN"), ("key", np.inf, "Inf"), ("w_v", -np.inf, "Inf"),
                                  ("b_o", np.nan, "NaN")):
            with self.subTest(name=name):
                root = ref.case_dir("compute_errors", "nonfinite_" + name)
                bundle = good_bundle(root)
                array = np.load(os.path.join(bundle, name + ".npy"))
                array.flat[1] = value
                np.save(os.path.join(bundle, name + ".npy"), array)
                self.check(root, [bundle], 1, name + ".npy", word)

    def test_float64_overflowing_float32(self):
        root = ref.case_dir("compute_errors", "overflow")
        bundle = good_bundle(root)
        array = np.ones((2, 4, 8))
        array[0, 0, 0] = 1e300
        np.save(os.path.join(bundle, "query.npy"), array)
        self.check(root, [bundle], 1, "query.npy", "overflows float32")

    # ---- bundle structure and shapes

    def test_missing_query(self):
        root = ref.case_dir("compute_errors", "no_query")
        bundle = good_bundle(root, query=None)
        self.check(root, [bundle], 1, "query.npy", "missing")

    def test_key_without_value(self):
        root = ref.case_dir("compute_errors", "key_only")
        bundle = good_bundle(root, value=None)
        self.check(root, [bundle], 1, "value.npy", "missing", "key.npy is present")

    def test_value_without_key(self):
        root = ref.case_dir("compute_errors", "value_only")
        bundle = good_bundle(root, key=None)
        self.check(root, [bundle], 1, "key.npy", "missing")

    def test_bundle_not_a_directory(self):
        root = ref.case_dir("compute_errors", "no_dir")
        self.check(root, [os.path.join(root, "nope")], 1, "nope", "no such bundle directory")

    def test_wrong_shapes(self):
        cases = (
            ("query", np.ones((2, 4, 8, 1), np.float32), "expected [B, L, Dq] or [L, Dq], got [2, 4, 8, 1]"),
            ("key", np.ones((3, 6, 5), np.float32), "expected [B, S, Dk] with B=2 like query.npy, got [3, 6, 5]"),
            ("value", np.ones((2, 5, 3), np.float32), "key and value lengths must match"),
            ("w_q", np.ones((8, 7), np.float32), "expected [D, Dq] with Dq=8"),
            ("w_k", np.ones((8, 4), np.float32), "expected [D, Dk] = [8, 5], got [8, 4]"),
            ("w_o", np.ones((8, 9), np.float32), "expected [D, D] = [8, 8]"),
            ("b_q", np.ones((7,), np.float32), "expected [D] = [8], got [7]"),
            ("attn_mask", np.ones((4, 7), bool), "expected [L, S] = [4, 6] or [B, L, S] = [2, 4, 6], got [4, 7]"),
            ("attn_mask", np.ones((3, 4, 6), bool), "got [3, 4, 6]"),
            ("key_padding", np.ones((2, 5), bool), "expected [B, S] = [2, 6], got [2, 5]"),
            ("valid_lens", np.array([3, 2, 1]), "expected [B] = [2], got [3]"),
            ("valid_lens", np.array([[3, 2]]), "expected a 1-D array"),
            ("valid_lens", np.array([3, 7]), "value 7 at index 1 is outside 0..S=6"),
        )
        for i, (name, array, needle) in enumerate(cases):
            with self.subTest(name=name, shape=array.shape):
                root = ref.case_dir("compute_errors", "shape_%d_%s" % (i, name))
                bundle = good_bundle(root, **{name: array})
                self.check(root, [bundle, "--heads", "2"], 1, name + ".npy", needle)

    def test_partial_weights(self):
        root = ref.case_dir("compute_errors", "partial_weights")
        bundle = good_bundle(root, w_k=None)
        self.check(root, [bundle], 1, "w_k.npy", "missing", "give all four weights")

    def test_heads_do_not_divide_d(self):
        root = ref.case_dir("compute_errors", "heads")
        bundle = good_bundle(root)
        self.check(root, [bundle, "--heads", "3"], 1, "--heads 3", "D=8", "D % H")
        ref.write_bundle(bundle, {}, meta={"heads": 5})
        self.check(root, [bundle], 1, "bundle.json", "\"heads\" 5", "D=8")

    def test_tokens_count(self):
        root = ref.case_dir("compute_errors", "tokens")
        bundle = good_bundle(root)
        ref.write_bundle(bundle, {}, texts={"tokens.txt": "a\nb\nc\n"})
        self.check(root, [bundle], 1, "tokens.txt", "3 labels", "L = 4")

    def test_bad_bundle_json(self):
        for text, needle in (("{heads: 2", "not valid JSON"), ("[1, 2]", "expected a JSON object"),
                             ('{"heads": "two"}', '"heads" must be an integer in 1..'),
                             ('{"mask": "casual"}', "unknown term 'casual'"),
                             ('{"fill": "zero"}', '"fill"'), ('{"scale": -1}', '"scale"'),
                             ('{"dropout": 1.5}', '"dropout"'), ('{"d_model": 0}', '"d_model"')):
            with self.subTest(text=text):
                root = ref.case_dir("compute_errors", "json")
                bundle = good_bundle(root)
                self.write(bundle, "bundle.json", text.encode())
                self.check(root, [bundle], 1, "bundle.json", needle)

    def test_endless_text_files(self):
        # Regression (issue 12): a tokens.txt or bundle.json that never ends (a link to
        # /dev/zero) was read until memory ran out.
        for name, needle in (("tokens.txt", "larger than 64 MiB, not a token list"),
                             ("bundle.json", "larger than 16 MiB, not a bundle.json")):
            with self.subTest(name=name):
                root = ref.case_dir("compute_errors", "endless_" + name)
                bundle = good_bundle(root)
                path = os.path.join(bundle, name)
                if os.path.lexists(path):
                    os.remove(path)
                os.symlink("/dev/zero", path)
                self.check(root, [bundle], 1, path + ": " + needle)

    def test_padding_without_lengths(self):
        root = ref.case_dir("compute_errors", "padding_no_lens")
        bundle = good_bundle(root)
        self.check(root, [bundle, "--mask", "padding"], 1, "padding", "--valid-lens")

    def test_valid_lens_flag_mismatch(self):
        root = ref.case_dir("compute_errors", "valid_lens_flag")
        bundle = good_bundle(root)
        self.check(root, [bundle, "--valid-lens", "3,2,1"], 1, "--valid-lens", "B=2")
        self.check(root, [bundle, "--valid-lens", "3,9"], 1, "--valid-lens", "S=6")

    def test_too_large_for_memory(self):
        # A 3 MB query.npy [1, 200000, 4]: self-attention scores [1, 1, 200000, 200000]
        # alone need 160 GB. Refused before any large allocation, naming the size.
        root = ref.case_dir("compute_errors", "too_large")
        bundle = os.path.join(root, "bundle")
        os.makedirs(bundle)
        np.save(os.path.join(bundle, "query.npy"), np.zeros((1, 200000, 4), np.float32))
        line = self.check(root, [bundle], 1, "query.npy", "L=200000", "needs", "GiB", "available")
        self.assertNotIn("\n", line)

    def test_unwritable_out(self):
        root = ref.case_dir("compute_errors", "unwritable")
        bundle = good_bundle(root)
        blocker = os.path.join(root, "a_file")
        with open(blocker, "w") as f:
            f.write("not a folder")
        self.check(root, [bundle], 1, "--out", "not a directory", out=os.path.join(blocker, "out"))
        self.check(root, [bundle], 1, "--out", "not a directory", out=blocker)
        with open(blocker) as f:
            self.assertEqual(f.read(), "not a folder")

    def test_corrupted_headers_never_crash(self):
        # 150 seeded corruptions of query.npy's first 128 bytes (magic, version, header
        # length and dict) and of its length: each run ends with 0 or a one-line exit 1.
        root = ref.case_dir("compute_errors", "corrupt")
        bundle = good_bundle(root)
        good = npy_bytes(np.ones((2, 4, 8), np.float32))
        rng = np.random.default_rng(2024)
        out = os.path.join(root, "out")
        for trial in range(150):
            data = bytearray(good)
            for _ in range(int(rng.integers(1, 4))):
                pos = int(rng.integers(0, 128))
                data[pos] = int(rng.integers(0, 256))
            if trial % 5 == 0:
                data = data[:int(rng.integers(0, len(data)))]
            self.write(bundle, "query.npy", bytes(data))
            result = ref.run_compute([bundle, "--out", out, "--heads", "2"])
            self.assertIn(result.returncode, (0, 1), "trial %d: %r" % (trial, result.stderr))
            if result.returncode == 1:
                self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
                self.assertIn("query.npy", result.stderr)
                self.assertTrue(result.stderr.isprintable() or result.stderr[:-1].isprintable(), result.stderr)
            shutil.rmtree(out, ignore_errors=True)

    # ---- usage errors: exit 2

    def test_usage_errors(self):
        root = ref.case_dir("compute_errors", "usage")
        bundle = good_bundle(root)
        cases = (
            ([bundle, "--mask", "casual"], "--mask", "unknown term 'casual'"),
            ([bundle, "--mask", "window:x"], "--mask", "window"),
            ([bundle, "--mask", "causal++window:2"], "--mask", "empty term"),
            ([bundle, "--mask-fill", "0"], "--mask-fill", "'0'"),
            ([bundle, "--mask-fill", "nan"], "--mask-fill"),
            ([bundle, "--scale", "-2"], "--scale"),
            ([bundle, "--scale", "abc"], "--scale"),
            ([bundle, "--dropout", "1.0"], "--dropout"),
            ([bundle, "--heads", "0"], "--heads"),
            ([bundle, "--heads", "two"], "--heads"),
            ([bundle, "--heads", "99999999999999999999"], "--heads", "1..1048576"),
            ([bundle, "--valid-lens", "3,x"], "--valid-lens"),
            ([bundle, "--demo"], "not both"),
            ([], "BUNDLE", "--demo"),
            ([bundle, "--no-such-flag"], "--no-such-flag"),
        )
        for args, *needles in cases:
            with self.subTest(args=args[1:]):
                self.check(root, args, 2, *needles)

    def test_missing_out_is_usage_error(self):
        root = ref.case_dir("compute_errors", "no_out")
        bundle = good_bundle(root)
        result = ref.run_compute([bundle])
        self.assertEqual(result.returncode, 2)
        self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
        self.assertIn("--out", result.stderr)

    def test_help(self):
        result = ref.run_compute(["--help"])
        self.assertEqual(result.returncode, 0)
        self.assertIn("--mask-fill", result.stdout)

    def test_failed_run_keeps_previous_outputs(self):
        # A good run, then a bad one into the same folder: the good files stay untouched.
        root = ref.case_dir("compute_errors", "keep_previous")
        bundle = good_bundle(root)
        out = os.path.join(root, "out")
        self.assertEqual(ref.run_compute([bundle, "--out", out, "--heads", "2"]).returncode, 0)
        before = read_all(out)
        self.assertEqual(sorted(before), sorted(ref.OUTPUT_FILES))
        result = ref.run_compute([bundle, "--out", out, "--heads", "3"])
        self.assertEqual(result.returncode, 1)
        self.assertEqual(before, read_all(out))


if __name__ == "__main__":
    unittest.main()
