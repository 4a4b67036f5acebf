"""GGUF architectures beyond test_gguf_model.py's, on files made by llama.cpp's own
convert_hf_to_gguf.py from random Hugging Face folders (hf_reference.py): F32 maps equal the
folder's float64 forward within 1e-5 (logits 1e-3), a Q8_0 file (libllama's llama_model_quantize
on the F32 one) equals a float64 forward on gguf-py's dequantization of that file (maps 1e-4,
logits 2e-3).
- phi3 (fused qkv and gate_up, partial rotary, longrope's short factors and attention factor
  within the original context; llama.cpp turns its window off; a file with an original context
  of 8 equals its folder past it, by the long factors), gemma3 (5 local : 1 global layers with a
  RoPE base each, as llama.cpp takes them from a file without pattern; 1 + w norms
  and q/k norms; linear scaling on the global layer), olmo2 (q/k norms over the whole
  projections, post norms only), smollm3 (no RoPE on every 4th layer, as llama.cpp hard-codes):
  llama.cpp's own logits of the F32 file agree loosely (its fp16 GELU table, 8-bit nothing).
- bert: an encoder without head (the converter drops the masked-LM head): maps only; its
  WordPiece vocabulary (tokenizer.ggml.model "bert", the pieces as the converter's BertModel
  writes them) gives the ids llama.cpp gives (node-llama-cpp's model.tokenize, [CLS] ... [SEP]).
"""
import json
import os
import shutil
import subprocess
import unittest

import numpy as np

import hf_reference as hf
import llama_cpp_reference as ref
import model_reference as mref
import tokenizer_reference as tref
from test_gguf_model import (F32_LOGITS_TOL, F32_MAPS_TOL, HERE, LOGITS_TOL, MAPS_TOL, check_against_forward,
                             dequantized_tensors, lib_dir, make_gguf, rewrite, run, with_byte_vocabulary)
from test_gguf_tokenizer import attnscope_ids

IDS = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]


def convert(name, family, opts, kinds):
    """(cfg, stored tensors, {kind: path}) of a random folder converted to each kind."""
    folder = mref.case_dir("gguf-families", name)
    shutil.rmtree(folder + "-gguf", ignore_errors=True)
    os.makedirs(folder + "-gguf")
    cfg, tensors = hf.make_model(family, **opts)
    stored = hf.write_folder(folder, cfg, tensors)
    if family == "gemma3_text":  # the converter cuts the embedding to tokenizer.json's size
        with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump({"model": {"vocab": {"t%d" % i: i for i in range(cfg["vocab_size"])}}, "added_tokens": []}, f)
    paths = {kind: os.path.join(folder + "-gguf", kind + ".gguf") for kind in kinds}
    make_gguf(folder, paths["f32"], "f32")
    for kind in kinds[1:]:  # llama_model_quantize on the F32 file (no second conversion)
        done = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "gguf_quantize.py"), lib_dir(), paths["f32"],
                               paths[kind], kind], capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise AssertionError(f"gguf_quantize.py {kind} failed: {done.stderr[-2000:]}")
    return cfg, stored, paths


class Checks(unittest.TestCase):
    def check_run(self, path, cfg, tensors, maps_tol, logits_tol):
        check_against_forward(self, path, path + "-out", cfg, tensors, IDS, maps_tol, logits_tol)

    def check_family(self, name, family, opts):
        cfg, stored, paths = convert(name, family, opts, ["f32", "Q8_0"])
        self.check_run(paths["f32"], cfg, stored, F32_MAPS_TOL, F32_LOGITS_TOL)
        self.check_run(paths["Q8_0"], cfg, dequantized_tensors(paths["Q8_0"], cfg, stored), MAPS_TOL, LOGITS_TOL)
        return cfg, paths


# name, family, make_model options (llama.cpp's choices the folders must share: Gemma 3's
# queries by 1/sqrt(head_dim), its pattern 6 and its local base from rope_parameters)
FAMILIES = [
    # P = 256: llama.cpp pads its context to 256 and takes the long factors past the original one
    ("phi3-longrope", "phi3", dict(seed=30, V=257, G=2, rotary=0.75, P=256, spelling=5)),
    ("gemma3-local-global", "gemma3_text", dict(seed=31, V=257, G=2, N=6, head_dim=8, qpas=8, window=3, spelling=5,
                                                rope_type="linear", factor=2.0, local_theta=100.0, final_cap=8.0)),
    ("olmo2", "olmo2", dict(seed=32, V=257, G=2)),
    ("smollm3-nope", "smollm3", dict(seed=33, V=257, G=2, N=4, tied=True)),
]


class GgufFamilies(Checks):
    def test_files_match_the_folders(self):
        for name, family, opts in FAMILIES:
            with self.subTest(family=family):
                cfg, paths = self.check_family(name, family, opts)
                self.check_llama_cpp(paths["f32"], cfg)
                if family == "gemma3_text":  # a pattern of another length: refused, naming the key
                    bad = paths["f32"] + ".bad-pattern.gguf"
                    rewrite(paths["f32"], bad, values={"gemma3.attention.sliding_window_pattern": (
                        [True, False], ref.gguf().GGUFValueType.ARRAY, ref.gguf().GGUFValueType.BOOL)})
                    done = run(bad, bad + "-out", IDS)
                    self.assertEqual((done.returncode, len(done.stderr.strip().splitlines())), (1, 1), done.stderr)
                    self.assertIn(bad + ": metadata key gemma3.attention.sliding_window_pattern has 2 entries for 6 layers",
                                  done.stderr)

    def test_phi3_long_factors_equal_the_folders(self):
        """A phi3 folder whose longrope's original context is 8 (max_position_embeddings 32), short
        and long factors apart, converted to F32 (the converter writes rope_factors_short and
        rope_factors_long): the file's maps and logits equal the folder's at 6 tokens (short
        factors) and 12 (long, every position), as attnscope picks the set by the text's length
        for both (llama.cpp by its context size)."""
        name = "phi3-long-factors"
        cfg, _, paths = convert(name, "phi3", dict(seed=36, V=257, G=2, rotary=0.75, P=8, spelling=5), ["f32"])
        folder = os.path.dirname(paths["f32"])[:-len("-gguf")]
        self.assertEqual((cfg["rope_parameters"]["original_max_position_embeddings"], cfg["max_position_embeddings"]), (8, 32))
        for L in (6, 12):
            with self.subTest(L=L):
                got = {}
                for path in (folder, paths["f32"]):
                    out = "%s-out-%d" % (path, L)
                    shutil.rmtree(out, ignore_errors=True)
                    done = run(path, out, IDS[:L])
                    self.assertEqual(done.returncode, 0, done.stderr)
                    got[path] = [np.load(os.path.join(out, f)) for f in ("attentions.npy", "logits.npy")]
                for a, b in zip(got[folder], got[paths["f32"]]):
                    np.testing.assert_allclose(b, a, atol=1e-5, rtol=0)

    def test_gemma3_27b_scales_by_the_width_per_head(self):
        """A 62-layer Gemma 3 (27B's depth) scales its queries by 1/sqrt(hidden / heads), as its
        query_pre_attn_scalar says and llama.cpp decides by the depth (the converter writes no
        scale): the F32 file equals the folder whose query_pre_attn_scalar is 32 / 4 = 8, not
        head_dim 16."""
        cfg, stored, paths = convert("gemma3-62-layers", "gemma3_text",
                                     dict(seed=34, V=257, G=2, N=62, head_dim=16, qpas=8, window=3, spelling=5), ["f32"])
        self.assertEqual((cfg["num_hidden_layers"], cfg["hidden_size"] // cfg["num_attention_heads"]), (62, 8))
        self.check_run(paths["f32"], cfg, stored, F32_MAPS_TOL, F32_LOGITS_TOL)

    def check_llama_cpp(self, path, cfg):
        """llama.cpp's logits of the F32 file (node-llama-cpp, F32 KV cache, no flash attention)
        against attnscope's: loosely (llama.cpp's GELU goes through an fp16 table). The file gets
        a byte vocabulary llama.cpp loads (V = 257) and a name without "phi3" (llama.cpp then
        expects Phi-3's special tokens)."""
        with_byte_vocabulary(path, path + ".vocab.gguf", {"general.name": ("tiny", ref.gguf().GGUFValueType.STRING, None)})
        path += ".vocab.gguf"
        self.assertEqual(run(path, path + "-out", IDS).returncode, 0)
        package = os.path.join(ref.install(), "node_modules", "node-llama-cpp")
        got = tref.run_node(os.path.join(os.path.dirname(os.path.abspath(__file__)), "llama_logits.mjs"), package, path,
                            json.dumps(IDS))
        want = np.load(path + "-out/logits.npy")
        llama = np.array(got, dtype=np.float64).reshape(want.shape)
        np.testing.assert_allclose(llama, want, atol=2e-3 * max(1.0, np.abs(want).max()), rtol=0, err_msg=cfg["model_type"])


# BERT's WordPiece pieces (before the converter's "▁" rule): every printable ASCII character
# word-initial and as a continuation, some words and suffixes, CJK and accented words.
BERT_WORDS = ([chr(c) for c in range(33, 127)] + ["##" + chr(c) for c in range(33, 127) if chr(c).isalnum()]
              + ["the", "def", "return", "self", "import", "if", "in", "for", "none", "class", "##ing", "##s", "##ed",
                 "##er", "space", "##s", "tab", "new", "##line", "digit", "emoji", "cafe", "naive", "resume",
                 "日", "本", "語", "中", "文", "注", "意", "力", "##ス", "テ", "키", "é", "ω"])


def bert_vocabulary():
    """(tokens, types) as convert_hf_to_gguf's BertModel.set_vocab writes them: control tokens
    as they are, a "##piece" as "piece", any other piece as "▁piece"."""
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words = list(dict.fromkeys(BERT_WORDS))
    tokens = specials + [w[2:] if w.startswith("##") else "\u2581" + w for w in words]
    return tokens, [3] * len(specials) + [1] * len(words)


class GgufBert(Checks):
    def test_maps_without_head_and_wordpiece_ids(self):
        tokens, types = bert_vocabulary()
        cfg, paths = self.check_family("bert", "bert", dict(seed=39, D=32, H=4, M=64, V=len(tokens), P=512, N=2,
                                                            head=False))
        g = ref.gguf()
        T = g.GGUFValueType
        path = paths["f32"] + ".vocab.gguf"
        rewrite(paths["f32"], path, drop=["tokenizer.ggml.model"], values={
            "tokenizer.ggml.model": ("bert", T.STRING, None), "tokenizer.ggml.pre": ("default", T.STRING, None),
            "tokenizer.ggml.tokens": (tokens, T.ARRAY, T.STRING), "tokenizer.ggml.token_type": (types, T.ARRAY, T.INT32),
            "tokenizer.ggml.token_type_count": (2, T.UINT32, None),
            "tokenizer.ggml.unknown_token_id": (1, T.UINT32, None), "tokenizer.ggml.bos_token_id": (2, T.UINT32, None),
            "tokenizer.ggml.seperator_token_id": (3, T.UINT32, None),
            "tokenizer.ggml.padding_token_id": (0, T.UINT32, None)})
        texts = [t for t in tref.VARIED_TEXTS if t.strip()] + tref.python_lines(12)[:12:3] + ["Self.Return café"]
        texts_path = path + ".texts.json"
        with open(texts_path, "w", encoding="utf-8") as f:
            json.dump(texts, f)
        package = os.path.join(ref.install(), "node_modules", "node-llama-cpp")
        llama = tref.run_node(os.path.join(os.path.dirname(os.path.abspath(__file__)), "llama_tokenize.mjs"),
                              package, path, texts_path)
        for n, text in enumerate(texts):
            with self.subTest(text=text[:40]):
                self.assertEqual(attnscope_ids(path, text, n), [2] + llama["ids"][n] + [3])
        self.assertTrue(any(1 in ids for ids in llama["ids"]))  # some word is [UNK]
        self.assertTrue(any(len(ids) > 3 for ids in llama["ids"]))


if __name__ == "__main__":
    unittest.main()
