"""The GGUF container (core/tensor/gguf.h) against llama.cpp's own gguf-py: files written by
gguf-py's GGUFWriter (versions 3 and, patched, 2), every metadata value type with arrays and
nested arrays, tensor infos (dimensions innermost first), a custom general.alignment; each bad
input exits 1 with one line naming the file and the byte offset, key or tensor. Read through
the test-only attnscope_gguf tool."""
import json
import os
import struct
import tempfile
import unittest

import numpy as np

import llama_cpp_reference as ref


def metadata_cases(g):
    """(key, value, GGUFValueType or None for add_array) written by the writer's typed adders."""
    T = g.GGUFValueType
    return [
        ("t.u8", 200, T.UINT8), ("t.i8", -100, T.INT8), ("t.u16", 60000, T.UINT16), ("t.i16", -30000, T.INT16),
        ("t.u32", 4000000000, T.UINT32), ("t.i32", -2000000000, T.INT32), ("t.f32", 0.5, T.FLOAT32),
        ("t.bool", True, T.BOOL), ("t.str", "héllo wörld", T.STRING), ("t.u64", 2 ** 63 + 5, T.UINT64),
        ("t.i64", -(2 ** 62), T.INT64), ("t.f64", 1e-300, T.FLOAT64),
        ("t.arr_i32", [1, -2, 3], None), ("t.arr_str", ["a", "", "ccc"], None),
        ("t.arr_f32", [0.25, -1.5], None), ("t.nested", [[1, 2], [3], [4, 5, 6]], None),
        ("t.nested_str", [["x", "y"], ["z"]], None),
    ]


def write_file(path, tensors, alignment=None, extra=True):
    g = ref.gguf()
    w = g.GGUFWriter(path, arch="llama")
    if alignment:
        w.add_custom_alignment(alignment)
    if extra:
        for key, value, vtype in metadata_cases(g):
            if vtype is None:
                w.add_array(key, value)
            else:
                w.add_key_value(key, value, vtype)
    for name, array, raw_dtype in tensors:
        w.add_tensor(name, array, raw_dtype=raw_dtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def small_tensors(g):
    rng = np.random.default_rng(0)
    return [("a.weight", rng.standard_normal((3, 64)).astype(np.float32), None),
            ("b.weight", rng.standard_normal((2, 2, 32)).astype(np.float16), None),
            ("c.bias", rng.standard_normal(5).astype(np.float32), None)]


class GgufReader(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.g = ref.gguf()
        cls.tmp = tempfile.TemporaryDirectory(dir=ref.TMP if os.path.isdir(ref.TMP) else None)
        cls.path = os.path.join(cls.tmp.name, "m.gguf")
        write_file(cls.path, small_tensors(cls.g))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def read(self, path, out=None):
        code, stdout, stderr = ref.attnscope_gguf(path, out)
        self.assertEqual(code, 0, stderr)
        return json.loads(stdout)

    def test_metadata_every_type(self):
        meta = self.read(self.path)["metadata"]
        self.assertEqual(meta["general.architecture"], "llama")
        for key, value, _ in metadata_cases(self.g):
            if isinstance(value, float):
                self.assertAlmostEqual(meta[key], value, delta=abs(value) * 1e-7)
            elif isinstance(value, list) and value and isinstance(value[0], float):
                np.testing.assert_allclose(meta[key], value, rtol=1e-7)
            else:
                self.assertEqual(meta[key], value, key)

    def test_tensors_innermost_first_and_values(self):
        with tempfile.TemporaryDirectory() as out:
            info = self.read(self.path, out)
            self.assertEqual(info["version"], 3)
            reader = self.g.GGUFReader(self.path)
            self.assertEqual(info["data_start"], reader.data_offset)
            for i, (name, array, _) in enumerate(small_tensors(self.g)):
                t = info["tensors"][i]
                self.assertEqual(t["name"], name)
                self.assertEqual(t["dims"], list(reversed(array.shape)))
                self.assertEqual(t["type"], "F32" if array.dtype == np.float32 else "F16")
                got = np.load(os.path.join(out, f"{i}.npy"))
                np.testing.assert_array_equal(got, array.astype(np.float32))

    def test_version_2_and_custom_alignment(self):
        path = os.path.join(self.tmp.name, "v2.gguf")
        write_file(path, small_tensors(self.g), alignment=256)
        with open(path, "r+b") as f:
            f.seek(4)
            f.write(struct.pack("<I", 2))
        info = self.read(path)
        self.assertEqual(info["version"], 2)
        self.assertEqual(info["alignment"], 256)
        self.assertEqual(info["data_start"] % 256, 0)
        self.assertTrue(all(t["offset"] % 256 == 0 for t in info["tensors"]))


def field_part_offset(field, part):
    """Byte offset of part `part` of a GGUFReader field (its parts lie back to back)."""
    return field.offset + sum(p.nbytes for p in field.parts[:part])


class GgufBadInput(unittest.TestCase):
    """Each case: bytes of a good file changed one way -> exit 1, one line naming the file and
    the offset, key or tensor."""

    @classmethod
    def setUpClass(cls):
        cls.g = ref.gguf()
        cls.tmp = tempfile.TemporaryDirectory()
        cls.good = os.path.join(cls.tmp.name, "good.gguf")
        write_file(cls.good, small_tensors(cls.g))
        with open(cls.good, "rb") as f:
            cls.bytes = f.read()
        cls.reader = cls.g.GGUFReader(cls.good)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def patched(self, at, packed):
        b = bytearray(self.bytes)
        b[at:at + len(packed)] = packed
        return bytes(b)

    def refuse(self, data, *fragments, out=False):
        path = os.path.join(self.tmp.name, "bad.gguf")
        with open(path, "wb") as f:
            f.write(data)
        with tempfile.TemporaryDirectory() as d:
            code, stdout, stderr = ref.attnscope_gguf(path, d if out else None)
        self.assertEqual(code, 1, stderr)
        self.assertEqual(stdout, "")
        self.assertEqual(len(stderr.strip().splitlines()), 1, stderr)
        self.assertTrue(stderr.startswith(path + ": "), stderr)
        for fragment in fragments:
            self.assertIn(fragment, stderr)

    def tensor_part(self, index, part):
        return field_part_offset(self.reader.tensors[index].field, part)

    def test_wrong_magic(self):
        self.refuse(b"GGML" + self.bytes[4:], "at byte 0", "not a GGUF file")

    def test_unsupported_version(self):
        for version in (1, 4):
            self.refuse(self.patched(4, struct.pack("<I", version)), "at byte 4", f"version {version} is not supported")

    def test_truncated_header(self):
        self.refuse(self.bytes[:14], "truncated header")

    def test_truncated_metadata(self):
        field = self.reader.fields["t.str"]
        self.refuse(self.bytes[:field.offset + 4], f"at byte {field.offset}", "truncated metadata")

    def test_string_length_beyond_file(self):
        field = self.reader.fields["t.str"]
        at = field_part_offset(field, 3)  # key length, key, type, then the value's length
        self.refuse(self.patched(at, struct.pack("<Q", 10 ** 12)), f"at byte {at}", "t.str", "string length")

    def test_array_length_beyond_file(self):
        field = self.reader.fields["t.arr_i32"]
        at = field_part_offset(field, 4)  # key length, key, type, element type, then the count
        self.refuse(self.patched(at, struct.pack("<Q", 10 ** 9)), "t.arr_i32", "array length")

    def test_offset_outside_data(self):
        at = self.tensor_part(1, 5)  # name length, name, n_dims, dims, type, offset
        self.refuse(self.patched(at, struct.pack("<Q", 2 ** 40)), "b.weight", "outside the data section")

    def test_misaligned_offset(self):
        at = self.tensor_part(1, 5)
        offset = int(self.reader.tensors[1].field.parts[5][0])
        self.refuse(self.patched(at, struct.pack("<Q", offset + 4)), "b.weight", "not a multiple of the alignment 32")

    def test_truncated_data(self):
        self.refuse(self.bytes[:-16], "truncated data", "c.bias")

    def test_unknown_tensor_type(self):
        at = self.tensor_part(0, 4)
        self.refuse(self.patched(at, struct.pack("<I", 99)), "a.weight", "unknown ggml type 99")

    def test_type_not_read_names_tensor_and_type(self):
        path = os.path.join(self.tmp.name, "iq2.gguf")
        blocks = np.zeros((1, 66), dtype=np.uint8)
        write_file(path, [("q.weight", blocks, self.g.GGMLQuantizationType.IQ2_XXS)], extra=False)
        with open(path, "rb") as f:
            data = f.read()
        self.refuse(data, "tensor q.weight has type IQ2_XXS, which attnscope does not read", "Q4_K", out=True)


if __name__ == "__main__":
    unittest.main()
