"""Dequantization of every tensor type attnscope reads (core/tensor/ggml_quants.h), bit for bit
against llama.cpp's gguf-py `quants.dequantize` (NumPy) on random blocks. One row per type:
its half-precision scale fields (byte offsets in a block), made finite so that values compare
by their bits; every other byte is random. Written by gguf-py's GGUFWriter as raw blocks, read
back through the test-only attnscope_gguf tool."""
import os
import tempfile
import unittest

import numpy as np

import llama_cpp_reference as ref
from test_gguf_reader import write_file

# type -> byte offsets of the block's float16 scales (bf16/f16/f32: whole values instead).
TYPES = {
    "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0],
    "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208],
    "IQ4_NL": [0], "IQ4_XS": [0],
}
FLOATS = {"F32": np.float32, "F16": np.float16}


def random_blocks(rng, n_blocks, block_bytes, scale_offsets):
    blocks = rng.integers(0, 256, size=(n_blocks, block_bytes), dtype=np.uint8)
    for at in scale_offsets:
        scales = (rng.standard_normal(n_blocks) * 0.05).astype(np.float16)
        scales[0] = 0.0
        blocks[:, at:at + 2] = scales.view(np.uint8).reshape(n_blocks, 2)
    return blocks


class GgufDequantize(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.g = ref.gguf()
        cls.rng = np.random.default_rng(36)

    def check(self, name, raw, qtype, rows):
        """raw: [rows, row bytes] of type qtype; attnscope's values equal gguf-py's bits."""
        from gguf import quants  # pylint: disable=import-outside-toplevel
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.gguf")
            write_file(path, [(name, raw, qtype)], extra=False)
            code, _, stderr = ref.attnscope_gguf(path, d)
            self.assertEqual(code, 0, stderr)
            got = np.load(os.path.join(d, "0.npy"))
        want = quants.dequantize(raw, qtype).astype(np.float32)
        self.assertEqual(got.shape, want.shape)
        self.assertEqual(got.shape[0], rows)
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=name)

    def test_quantized_types_bit_exact(self):
        Q = self.g.GGMLQuantizationType
        for name, offsets in TYPES.items():
            with self.subTest(type=name):
                qtype = Q[name]
                block, block_bytes = self.g.GGML_QUANT_SIZES[qtype]
                rows, per_row = 3, 2 * (512 // block if block < 256 else 1)
                raw = random_blocks(self.rng, rows * per_row, block_bytes, offsets).reshape(rows, per_row * block_bytes)
                self.check(name, raw, qtype, rows)

    def test_float_types_bit_exact(self):
        Q = self.g.GGMLQuantizationType
        x = (self.rng.standard_normal((4, 96)) * 3).astype(np.float32)
        x[0, :4] = [0.0, -0.0, 65504.0, 1e-7]
        for name, dtype in FLOATS.items():
            with self.subTest(type=name):
                values = x.astype(dtype)
                self.check(name, values.view(np.uint8).reshape(4, -1), Q[name], 4)
        bf16 = (x.view(np.uint32) >> 16).astype(np.uint16)
        self.check("BF16", bf16.view(np.uint8).reshape(4, -1), Q.BF16, 4)

    def test_quantized_by_gguf_py_round_trip(self):
        """Blocks gguf-py's own quantizer makes (realistic scales), for the types it quantizes."""
        from gguf import quants  # pylint: disable=import-outside-toplevel
        Q = self.g.GGMLQuantizationType
        x = self.rng.standard_normal((5, 256)).astype(np.float32)
        for name in ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"):
            with self.subTest(type=name):
                self.check(name, quants.quantize(x, Q[name]), Q[name], 5)


if __name__ == "__main__":
    unittest.main()
