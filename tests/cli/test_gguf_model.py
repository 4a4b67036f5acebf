"""`attnscope model run FILE.gguf` (docs/models.md, "GGUF files") on files made by llama.cpp's own
code: random Hugging Face folders (hf_reference.py) converted by the release's convert_hf_to_gguf.py
(F32, F16, BF16, Q8_0) and requantized by its libllama's llama_model_quantize (Q4_0, Q4_1, Q5_0,
Q5_1, K-quants, IQ4_NL, IQ4_XS), including models whose rows are multiples of 256 so that the
K-quants apply to every matrix.
- F32 files: maps equal the float64 forward of the folder within 1e-5 (logits 1e-3), the same
  tolerances as the folders themselves (test_hf_model.py).
- Every file: maps within 1e-4 and logits within 2e-3 of a float64 forward on gguf-py's
  dequantization of the same file (llama.cpp's permutation of Q/K undone, Gemma's 1 + w norms
  and GPT-2's transposes turned back, by the test).
- Together the files hold every tensor type attnscope reads.
- llama.cpp's own logits of the same files agree (exactly for F32, loosely for its 8-bit
  activations on quantized files).
- Bad files: one line naming the file and the key or tensor, exit 1: an unknown architecture, a
  missing hyperparameter key, a tensor of the wrong shape, weights over the memory budget.
"""
import json
import os
import shutil
import subprocess
import unittest

import numpy as np
import torch

import hf_reference as hf
import llama_cpp_reference as ref
import model_reference as mref

HERE = os.path.dirname(os.path.abspath(__file__))
MAPS_TOL, LOGITS_TOL = 1e-4, 2e-3
F32_MAPS_TOL, F32_LOGITS_TOL = 1e-5, 1e-3

# name, family, make_model options, GGUF types (converter outtypes in lower case, llama_ftype names upper case)
MODELS = [
    ("llama-gqa", "llama", dict(seed=3, G=2), ["f32", "f16", "bf16", "q8_0", "Q4_0", "Q5_0", "Q4_K_M", "Q6_K"]),
    ("llama-rows-256", "llama", dict(seed=40, D=256, H=4, G=2, M=512, V=256, N=2, qk_scale=0.35),
     ["Q2_K", "Q3_K_M", "Q4_K_M", "Q5_K_M", "Q6_K", "Q4_1", "Q5_1", "IQ4_NL", "IQ4_XS"]),
    ("qwen2-biases", "qwen2", dict(seed=8, G=2), ["f32", "bf16", "Q8_0", "Q4_0"]),
    ("qwen3-qk-norm", "qwen3", dict(seed=19, G=2, head_dim=16), ["f32", "Q5_0"]),
    # llama.cpp's gpt2 reads feed_forward_length, which the converter writes as 4 x n_embd: M = 4 D
    ("gpt2", "gpt2", dict(seed=1, M=128), ["f32", "f16", "q8_0", "Q5_0"]),
    # llama.cpp scales Gemma 2's queries by 1/sqrt(head_dim) (the 2B and 9B value): qpas = head_dim
    ("gemma2-window", "gemma2", dict(seed=10, G=2, window=4, N=3, qpas=8), ["f32", "bf16", "Q4_0"]),
    ("gemma2-rows-256", "gemma2", dict(seed=41, D=256, H=2, G=1, M=256, V=256, window=3, N=2, qpas=128, qk_scale=0.35),
     ["Q4_K_M", "Q6_K"]),
]

IDS = [[5], [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3]]


def lib_dir():
    return os.path.join(ref.install(), "node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64")


def make_gguf(folder, out, kind):
    """FOLDER converted (lower-case kind) or converted to F32 and requantized (upper case)."""
    if kind.islower():
        ref.install()  # llama.cpp's source beside this build (the sanitized build has its own folder)
        command = ["/usr/bin/python3", os.path.join(HERE, "gguf_convert.py"), ref.SOURCE, folder, out, kind]
    else:
        f32 = out + ".f32.gguf"
        if not os.path.exists(f32):
            make_gguf(folder, f32, "f32")
        command = ["/usr/bin/python3", os.path.join(HERE, "gguf_quantize.py"), lib_dir(), f32, out, kind]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(command)} failed: {done.stderr[-2000:]}")


def dequantized_tensors(path, cfg, names):
    """The HF-named float64 tensors of a GGUF file, from gguf-py's reader and dequantizer, with the
    converter's changes turned back."""
    g = ref.gguf()
    from gguf import quants  # pylint: disable=import-outside-toplevel
    arch = {"llama": g.MODEL_ARCH.LLAMA, "qwen2": g.MODEL_ARCH.QWEN2, "qwen3": g.MODEL_ARCH.QWEN3,
            "gpt2": g.MODEL_ARCH.GPT2, "gemma2": g.MODEL_ARCH.GEMMA2, "bert": g.MODEL_ARCH.BERT,
            "phi3": g.MODEL_ARCH.PHI3, "gemma3_text": g.MODEL_ARCH.GEMMA3, "olmo2": g.MODEL_ARCH.OLMO2,
            "smollm3": g.MODEL_ARCH.SMOLLM3}[cfg["model_type"]]
    n_layers = cfg.get("num_hidden_layers", cfg.get("n_layer"))
    name_map = g.get_tensor_name_map(arch, n_layers)
    stored = {t.name: quants.dequantize(t.data, t.tensor_type).astype(np.float64)
              for t in g.GGUFReader(path).tensors}
    out = {}
    for name in names:
        gguf_name = name_map.get_name(name.removeprefix("bert."), try_suffixes=(".weight", ".bias"))
        if gguf_name not in stored:
            continue  # a tied head
        w = stored[gguf_name]
        if cfg["model_type"] in ("llama", "smollm3") and gguf_name.endswith(("attn_q.weight", "attn_k.weight")):
            heads = cfg["num_attention_heads"] if "attn_q" in gguf_name else cfg.get("num_key_value_heads",
                                                                                      cfg["num_attention_heads"])
            w = w.reshape(heads, w.shape[0] // heads // 2, 2, -1).swapaxes(1, 2).reshape(w.shape)
        if cfg["model_type"] in ("gemma2", "gemma3_text") and gguf_name.endswith("norm.weight"):
            w = w - 1.0
        if cfg["model_type"] == "gpt2" and name.endswith(("c_attn.weight", "c_proj.weight", "c_fc.weight")):
            w = w.T
        out[name] = torch.tensor(np.ascontiguousarray(w))
    return out


def run(path, out, ids):
    return subprocess.run([mref.BIN, "model", "run", path, "--ids", ",".join(map(str, ids)), "--out", out],
                          capture_output=True, text=True, timeout=300)


def check_against_forward(test, path, out, cfg, tensors, ids, maps_tol, logits_tol):
    """`model run` of the file on ids into out: its maps (and logits, where the model has a head)
    against hf_reference's float64 forward on `tensors`."""
    done = run(path, out, ids)
    test.assertEqual(done.returncode, 0, done.stderr)
    logits, attns = hf.forward(cfg, tensors, ids)
    want = torch.stack(attns).unsqueeze(1).numpy()
    got = np.load(os.path.join(out, "attentions.npy"))
    test.assertEqual(got.shape, want.shape)
    np.testing.assert_allclose(got, want, atol=maps_tol, rtol=0)
    if logits is None:
        test.assertFalse(os.path.exists(os.path.join(out, "logits.npy")))
    else:
        np.testing.assert_allclose(np.load(os.path.join(out, "logits.npy")), logits.numpy(), atol=logits_tol, rtol=0)


READABLE = {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K",
            "IQ4_NL", "IQ4_XS"}


class GgufModels(unittest.TestCase):
    types_seen = set()
    def check_run(self, path, cfg, tensors, ids, maps_tol, logits_tol):
        out = path + "-out-%d" % len(ids)
        check_against_forward(self, path, out, cfg, tensors, ids, maps_tol, logits_tol)
        self.assertEqual([int(columns[1]) for columns in mref.tokens_txt(out)], ids)

    def test_files_match_float64_forwards(self):
        for name, family, opts, kinds in MODELS:
            folder = mref.case_dir("gguf", name)
            shutil.rmtree(folder + "-gguf", ignore_errors=True)
            opts = dict(opts)
            qk_scale = opts.pop("qk_scale", 1.0)
            cfg, tensors = hf.make_model(family, **opts)
            for n in tensors:  # D = 256 with make_model's weights: scores of tens, maps sharper than float32 follows to 1e-4
                if n.endswith(("q_proj.weight", "k_proj.weight")):
                    tensors[n] = tensors[n] * qk_scale
            if family == "gpt2":
                cfg["n_ctx"] = cfg["n_positions"]  # GPT-2's config.json has both; the converter reads n_ctx
            if family == "gemma2":
                cfg["rope_theta"] = 10000.0  # Gemma 2's converter writes no rope.freq_base: llama.cpp's default
            stored = hf.write_folder(folder, cfg, tensors)
            for kind in kinds:  # pylint: disable=too-many-nested-blocks
                path = os.path.join(folder + "-gguf", kind + ".gguf")
                os.makedirs(os.path.dirname(path), exist_ok=True)
                make_gguf(folder, path, kind)
                weights = dequantized_tensors(path, cfg, stored)
                code, info, stderr = ref.attnscope_gguf(path)
                self.assertEqual(code, 0, stderr)
                self.types_seen.update(t["type"] for t in json.loads(info)["tensors"])
                for ids in IDS:
                    with self.subTest(model=name, type=kind, L=len(ids)):
                        self.check_run(path, cfg, weights, ids, MAPS_TOL, LOGITS_TOL)
                        if kind == "f32":
                            self.check_run(path, cfg, stored, ids, F32_MAPS_TOL, F32_LOGITS_TOL)

        self.assertEqual(self.types_seen, READABLE)


def rewrite(src, dst, arch=None, drop=(), values=None):
    """SRC copied by gguf-py's writer with general.architecture `arch`, the keys in `drop` left out
    and `values` {key: (value, GGUFValueType, array element type or None)} set."""
    g = ref.gguf()
    reader = g.GGUFReader(src)
    old_arch = reader.fields["general.architecture"].contents()
    w = g.GGUFWriter(dst, arch=arch or old_arch)
    values = values or {}
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture" or key in drop or key in values:
            continue
        sub = field.types[-1] if field.types[0] == g.GGUFValueType.ARRAY else None
        w.add_key_value(key, field.contents(), field.types[0], sub_type=sub)
    for key, (value, vtype, sub) in values.items():
        w.add_key_value(key, value, vtype, sub_type=sub)
    for t in reader.tensors:
        w.add_tensor(t.name, t.data, raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def with_byte_vocabulary(src, dst, values=None):
    """SRC with a vocabulary llama.cpp loads: tokenizer.ggml.model "gpt2", GPT-2's 256 byte
    tokens (id = the byte) plus "ĠĠ" (id 256) and its one merge. The model's vocab must be 257."""
    T = ref.gguf().GGUFValueType
    chars = hf.bytes_to_unicode()
    rewrite(src, dst, values={
        "tokenizer.ggml.model": ("gpt2", T.STRING, None), "tokenizer.ggml.pre": ("gpt-2", T.STRING, None),
        "tokenizer.ggml.tokens": ([chars[b] for b in range(256)] + [chars[32] * 2], T.ARRAY, T.STRING),
        "tokenizer.ggml.merges": ([chars[32] + " " + chars[32]], T.ARRAY, T.STRING), **(values or {})})


class GgufLlamaCppLogits(unittest.TestCase):
    """llama.cpp's own logits of the same files (node-llama-cpp, flash attention off, F32 KV
    cache): an F32 file within 1e-4; quantized files only as closely as llama.cpp's 8-bit
    activations allow (its dot products quantize activations to Q8): correlation of the logits
    at least 0.99 and no logit further than 10% of the largest (measured here: 1.7% for Q8_0,
    3.4% for Q4_K_M, 4.9% for Q4_0)."""
    IDS = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]

    def test_logits_agree(self):
        d = mref.case_dir("gguf", "llama-cpp-logits")
        cfg, tensors = hf.make_model("llama", seed=50, V=257, P=64, G=2, N=2, H=4, D=32)
        hf.write_folder(os.path.join(d, "llama"), cfg, tensors)
        plain = os.path.join(d, "plain.gguf")
        make_gguf(os.path.join(d, "llama"), plain, "f32")
        f32 = os.path.join(d, "F32.gguf")
        with_byte_vocabulary(plain, f32)
        package = os.path.join(ref.install(), "node_modules", "node-llama-cpp")
        for kind in ("F32", "Q8_0", "Q4_K_M", "Q4_0"):
            path = os.path.join(d, kind + ".gguf")
            if kind != "F32":
                done = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "gguf_quantize.py"), lib_dir(), f32, path,
                                       kind], capture_output=True, text=True, timeout=300)
                self.assertEqual(done.returncode, 0, done.stderr[-2000:])
            with self.subTest(type=kind):
                done = subprocess.run(["node", os.path.join(HERE, "llama_logits.mjs"), package, path, json.dumps(self.IDS)],
                                      capture_output=True, text=True, timeout=300)
                self.assertEqual(done.returncode, 0, done.stderr[-2000:])
                theirs = np.array(json.loads(done.stdout))
                out = path + "-out"
                self.assertEqual(run(path, out, self.IDS).returncode, 0)
                ours = np.load(os.path.join(out, "logits.npy"))
                self.assertEqual(theirs.shape, ours.shape)
                if kind == "F32":
                    np.testing.assert_allclose(ours, theirs, atol=1e-4, rtol=0)
                    continue
                self.assertGreater(np.corrcoef(ours.ravel(), theirs.ravel())[0, 1], 0.99)
                self.assertLess(np.abs(ours - theirs).max(), 0.1 * np.abs(ours).max())


class GgufModelErrors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = mref.case_dir("gguf", "errors")
        cfg, tensors = hf.make_model("llama", seed=5, G=2)
        hf.write_folder(os.path.join(cls.dir, "llama"), cfg, tensors)
        cls.good = os.path.join(cls.dir, "good.gguf")
        make_gguf(os.path.join(cls.dir, "llama"), cls.good, "f32")

    def refuse(self, path, *fragments, env=None):
        done = subprocess.run([mref.BIN, "model", "run", path, "--ids", "1,2", "--out", path + "-out"],
                              capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual(done.returncode, 1, done.stderr)
        self.assertEqual(len(done.stderr.strip().splitlines()), 1, done.stderr)
        self.assertIn(path + ": ", done.stderr)
        for fragment in fragments:
            self.assertIn(fragment, done.stderr)
        self.assertFalse(os.path.exists(path + "-out"))

    def test_unknown_architecture(self):
        path = os.path.join(self.dir, "mamba.gguf")
        rewrite(self.good, path, arch="mamba", drop=[k for k in ref.gguf().GGUFReader(self.good).fields
                                                    if k.startswith("llama.")])
        self.refuse(path, 'general.architecture is "mamba"', "llama, qwen2, qwen3, gpt2, gemma2")

    def test_missing_key(self):
        path = os.path.join(self.dir, "no-blocks.gguf")
        rewrite(self.good, path, drop=["llama.block_count"])
        self.refuse(path, "metadata key llama.block_count is missing")

    def test_wrong_shape(self):
        path = os.path.join(self.dir, "wide.gguf")
        rewrite(self.good, path, values={"llama.feed_forward_length": (96, ref.gguf().GGUFValueType.UINT32, None)})
        self.refuse(path, "tensor blk.0.ffn_gate.weight has shape [64, 32]", "implies [96, 32]")

    def test_generate_and_lens_on_a_quantized_file(self):
        """model generate through the KV cache equals a fresh run of its ids; --lens writes the lens."""
        path = os.path.join(self.dir, "q4km.gguf")
        make_gguf(os.path.join(self.dir, "llama"), path, "Q4_K_M")
        gen = os.path.join(self.dir, "gen")
        done = subprocess.run([mref.BIN, "model", "generate", path, "--ids", "3,1,4", "--tokens", "5", "--out", gen],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        ids = [int(columns[1]) for columns in mref.tokens_txt(gen)]
        self.assertEqual(ids[:3], [3, 1, 4])
        self.assertEqual(len(ids), 8)
        fresh = os.path.join(self.dir, "fresh")
        done = subprocess.run([mref.BIN, "model", "run", path, "--ids", ",".join(map(str, ids)), "--lens", "--out",
                               fresh], capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        np.testing.assert_allclose(np.load(os.path.join(gen, "attentions.npy")),
                                   np.load(os.path.join(fresh, "attentions.npy")), atol=1e-6, rtol=0)
        lens = np.load(os.path.join(fresh, "lens_probs.npy"))
        self.assertEqual(lens.shape[:2], (3, len(ids)))  # embeddings + 2 layers

    def test_over_the_memory_budget(self):
        env = dict(os.environ, ATTNSCOPE_MEMORY_BYTES=str(20000))
        self.refuse(self.good, "the weights in memory", "ATTNSCOPE_MEMORY_BYTES", env=env)


if __name__ == "__main__":
    unittest.main()
