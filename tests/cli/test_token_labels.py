"""Issue 35, labels a user can trust (docs/models.md, "Readable labels"; docs/cli.md): a
character spelled in SentencePiece byte-fallback pieces (Llama, Mistral, Gemma 2) reads as
itself on its first piece and "·" on the others, in tokens.txt, the top-5, an export's labels
and for --ids; BERT's unknown token reads "[UNK]" (not "[UNK] (unk)"); the top-5 columns line
up by display width after labels such as "␣hi" or "世"."""
import csv
import os
import subprocess
import unicodedata
import unittest

import hf_reference as hf
import model_reference as ref

DOT = "\u00b7"
SPACE = "\u2423"


def attnscope(*args):
    return subprocess.run([ref.BIN, *args], capture_output=True, text=True, timeout=120)


def width(text):
    """Terminal columns: East Asian wide and full-width characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 0 if unicodedata.combining(c) else 1 for c in text)


class ByteFallbackLabels(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = ref.case_dir("token-labels", "llama-byte-fallback")
        cfg, tensors = hf.make_model("llama", seed=51, V=300, P=64, G=2)
        hf.write_folder(cls.folder, cfg, tensors)
        hf.write_sentencepiece_bpe(cls.folder)

    def test_model_run_labels_a_character_on_its_first_piece(self):
        out = self.folder + "-run"
        result = ref.run_model(self.folder, "hi \u4e16\u754c \u00fc", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        rows = ref.tokens_txt(out)
        byte = lambda b: str(3 + b)  # noqa: E731  (<0xNN> is id 3 + NN)
        self.assertEqual([r[1] for r in rows][3:],
                         [byte(0xE4), byte(0xB8), byte(0x96), byte(0xE7), byte(0x95), byte(0x8C),
                          rows[2][1], byte(0xC3), byte(0xBC)])
        self.assertEqual([r[2] for r in rows],
                         ["<s>", SPACE + "hi", SPACE, "\u4e16", DOT, DOT, "\u754c", DOT, DOT, SPACE, "\u00fc", DOT])
        self.assertNotIn("<0x", result.stdout.split("next token")[1].splitlines()[0])  # the text after "next token after"
        # The raw pieces stay in a sixth column of the byte pieces' lines; the others keep three.
        pieces = {int(r[0]): r[5] for r in rows if len(r) == 6}
        self.assertEqual(pieces, {3: "<0xE4>", 4: "<0xB8>", 5: "<0x96>", 6: "<0xE7>", 7: "<0x95>", 8: "<0x8C>",
                                  10: "<0xC3>", 11: "<0xBC>"})
        self.assertTrue(all(len(r) == 3 for r in rows if int(r[0]) not in pieces), rows)
        self.assertTrue(all(r[3] == "" and r[4] == "" for r in rows if len(r) == 6), rows)

    def test_ids_are_labelled_as_a_sequence(self):
        out = self.folder + "-ids"
        result = attnscope("model", "run", self.folder, "--ids", "1,%d,%d,%d,%d" % (3 + 0xE4, 3 + 0xB8, 3 + 0x96, 3 + 0x41),
                           "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual([r[2] for r in ref.tokens_txt(out)], ["<s>", "\u4e16", DOT, DOT, "A"])

    def test_a_lone_piece_keeps_its_byte_name(self):
        """A lead byte without its continuation, or a continuation without lead: <0xNN>."""
        out = self.folder + "-lone"
        result = attnscope("model", "run", self.folder, "--ids", "%d,%d,%d" % (3 + 0xB8, 3 + 0xE4, 3 + 0x41), "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual([r[2] for r in ref.tokens_txt(out)], ["<0xB8>", "<0xE4>", "A"])

    def test_export_writes_the_same_labels(self):
        out = ref.fresh(self.folder + "-csv")
        result = attnscope("export", self.folder, "--text", "\u4e16 hi", "--format", "csv", "--layers", "0",
                           "--heads", "0", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        files = [f for f in os.listdir(out) if f.endswith(".csv")]
        self.assertTrue(files, os.listdir(out))
        with open(os.path.join(out, files[0]), encoding="utf-8") as f:
            header = next(csv.reader(f))
        self.assertEqual(header[1:], ["<s>", SPACE, "\u4e16", DOT, DOT, SPACE + "hi"])


class UnknownToken(unittest.TestCase):
    def test_bert_unknown_reads_as_its_name(self):
        folder = ref.case_dir("token-labels", "bert-unk")
        cfg, tensors = hf.make_model("bert", seed=52, V=16, P=16)
        hf.write_folder(folder, cfg, tensors)
        hf.write_wordpiece(folder)
        out = ref.fresh(folder + "-csv")
        result = attnscope("export", folder, "--text", "the \u2603 head", "--format", "csv", "--layers", "0",
                           "--heads", "0", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        files = [f for f in os.listdir(out) if f.endswith(".csv")]
        with open(os.path.join(out, files[0]), encoding="utf-8") as f:
            header = next(csv.reader(f))
        self.assertEqual(header[1:], ["[CLS]", "the", "[UNK]", "head", "[SEP]"])
        run = folder + "-run"
        result = ref.run_model(folder, "the \u2603 head", run)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(ref.tokens_txt(run)[2], ["2", "1", "[UNK]", "unknown"])


class TopFiveColumns(unittest.TestCase):
    def test_probabilities_line_up_after_wide_labels(self):
        """A vocabulary of "▁word" pieces (labels "␣word", 3 bytes for one column) and a CJK
        word (two columns a character): every top-5 line's probability starts in one column."""
        folder = ref.case_dir("token-labels", "top5-columns")
        words = ["\u2581", "\u2581a", "\u2581bb", "\u2581\u4e16\u754c", "\u4e16", "\u754c", "\u2581\u4e16", "x",
                 "\u2581x", "\u2581yy"]
        vocab = hf.write_sentencepiece_bpe(folder, words=words, byte_fallback=False)
        for seed in (53, 54, 55):
            with self.subTest(seed=seed):
                cfg, tensors = hf.make_model("llama", seed=seed, V=len(vocab), P=16)
                hf.write_folder(folder, cfg, tensors)
                result = ref.run_model(folder, "a bb x", folder + "-out-%d" % seed)
                self.assertEqual(result.returncode, 0, result.stderr)
                lines = result.stdout.split("next token")[1].splitlines()[1:6]
                self.assertTrue(any(SPACE in line for line in lines), lines)
                columns = {width(line[:line.rindex("'") + 1]) + len(line[line.rindex("'") + 1:]) -
                           len(line[line.rindex("'") + 1:].lstrip()) for line in lines}
                self.assertEqual(len(columns), 1, "\n".join(lines))


if __name__ == "__main__":
    unittest.main()
