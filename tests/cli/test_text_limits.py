"""Issue 35, a text longer than the model's context (docs/cli.md, "--truncate"): refused after
tokenizing just past the context ("more than N tokens", naming the key the config has), a
10 MB --text-file included (in little memory); or, with --truncate, the run reads the first
(end) or last (start) context's worth of the full tokenization, special tokens kept, for
model run, export, analyze and model generate. Bad values are usage errors."""
import json
import os
import re
import subprocess
import unittest

import hf_reference as hf
import model_reference as ref

P = 16  # the small folders' context


def attnscope(*args, timeout=120):
    return subprocess.run([ref.BIN, *args], capture_output=True, text=True, timeout=timeout)


def twin_folders(name, family, write_tokenizer, seed):
    """The same tokenizer and weights with context P and with a context that holds the text."""
    folders = []
    for context in (P, 512):
        folder = ref.case_dir("text-limits", "%s-%d" % (name, context))
        cfg, tensors = hf.make_model(family, seed=seed, V=300, P=context)
        hf.write_folder(folder, cfg, tensors)
        write_tokenizer(folder)
        folders.append(folder)
    return folders


TEXT = "hi the \u4e16\u754c a head hi hi \u00fc the a hi \u4e16 head the end"  # 40-odd tokens either way


class TooLong(unittest.TestCase):
    def test_ten_megabytes_are_refused_fast_and_small(self):
        """GPT-2's byte-level BPE: one token a byte, 10 MB of text. The refusal names the key
        (n_positions) and says "more than": tokenizing stopped past the context."""
        folder = ref.case_dir("text-limits", "gpt2-10mb")
        cfg, tensors = hf.make_model("gpt2", seed=56, V=256, P=64)
        hf.write_folder(folder, cfg, tensors)
        hf.write_byte_level_bpe(folder)
        path = folder + "-text.txt"
        with open(path, "w", encoding="utf-8") as f:
            f.write(("the attention head \u4e16\u754c \u00fc\n" * 400000)[:10 * 1000 * 1000])
        result = subprocess.run(["/usr/bin/time", "-v", ref.BIN, "model", "run", folder, "--text-file", path,
                                 "--out", folder + "-out"], capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("the text has more than 64 tokens but %s's context is 64 (n_positions in %s)"
                      % (os.path.basename(folder), os.path.join(folder, "config.json")), result.stderr)
        if os.environ.get("ATTNSCOPE_SANITIZED") != "1":  # ASan's shadow memory and quarantine count as resident
            peak_kib = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr).group(1))
            self.assertLess(peak_kib, 300 * 1024, "peak RSS %d KiB" % peak_kib)  # the text, its normalized copy, words
        self.assertFalse(os.path.exists(folder + "-out"))

    def test_llama_config_key_and_count_with_bos(self):
        short, _ = twin_folders("llama-refuse", "llama", hf.write_sentencepiece_bpe, 57)
        result = ref.run_model(short, TEXT, short + "-out")
        self.assertEqual(result.returncode, 1)
        self.assertIn("the text has more than %d tokens but" % P, result.stderr)
        self.assertIn("(max_position_embeddings in %s)" % os.path.join(short, "config.json"), result.stderr)
        # Exactly the context fits (BOS counted): <s> ▁ and 14 h.
        result = ref.run_model(short, "h" * 14, short + "-fits")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(len(ref.tokens_txt(short + "-fits")), P)
        result = ref.run_model(short, "h" * 15, short + "-one-more")
        self.assertIn("the text has more than %d tokens" % P, result.stderr)


class Truncate(unittest.TestCase):
    def full_ids(self, long_folder, text):
        out = long_folder + "-full"
        result = ref.run_model(long_folder, text, out)
        self.assertEqual(result.returncode, 0, result.stderr)
        return [r[1] for r in ref.tokens_txt(out)], [r[2] for r in ref.tokens_txt(out)]

    def check_run(self, folder, text, how, expected_ids):
        out = folder + "-" + how
        path = out + ".txt"
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        result = attnscope("model", "run", folder, "--text-file", path, "--truncate", how, "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual([r[1] for r in ref.tokens_txt(out)], expected_ids)
        kept = "last" if how == "start" else "first"
        self.assertIn("--truncate %s kept its %s %d tokens" % (how, kept, P), result.stdout)

    def test_byte_level_keeps_the_first_or_last_tokens(self):
        short, long = twin_folders("gpt2", "gpt2", hf.write_byte_level_bpe, 58)
        ids, _ = self.full_ids(long, TEXT)
        self.assertGreater(len(ids), P)
        self.check_run(short, TEXT, "end", ids[:P])
        self.check_run(short, TEXT, "start", ids[-P:])

    def test_bos_stays_first(self):
        """Llama's "<s>": --truncate start drops text tokens after it, the run still starts with it."""
        short, long = twin_folders("llama", "llama", hf.write_sentencepiece_bpe, 59)
        ids, labels = self.full_ids(long, TEXT)
        self.assertEqual(labels[0], "<s>")
        self.check_run(short, TEXT, "end", ids[:P])
        self.check_run(short, TEXT, "start", ids[:1] + ids[-(P - 1):])

    def test_export_analyze_and_generate_take_it(self):
        short, long = twin_folders("llama-commands", "llama", hf.write_sentencepiece_bpe, 60)
        ids, labels = self.full_ids(long, TEXT)
        out = ref.fresh(short + "-export")
        result = attnscope("export", short, "--text", TEXT, "--truncate", "start", "--format", "csv", "--layers", "0",
                           "--heads", "0", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        [name] = [f for f in os.listdir(out) if f.endswith(".csv")]
        with open(os.path.join(out, name), encoding="utf-8") as f:
            header = f.readline().rstrip("\n").split(",")[1:]
        # The cut falls inside 世: its continuation pieces, without their lead, show their bytes.
        self.assertEqual(labels[-(P - 1):][:2], ["\u00b7", "\u00b7"])
        self.assertEqual(header, labels[:1] + ["<0xB8>", "<0x96>"] + labels[-(P - 3):])
        result = attnscope("analyze", short, "--text", TEXT, "--truncate", "end", "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(len(json.loads(result.stdout)), 2 * 4)  # 2 layers x 4 heads
        result = attnscope("analyze", short, "--text", TEXT, "--json")
        self.assertEqual(result.returncode, 1)
        # analyze and export count as the app does, to 4 contexts: the real count here.
        self.assertIn("the text has %d tokens but" % len(ids), result.stderr)
        # generate: the prompt's last tokens, leaving room for the 4 new ones.
        out = short + "-generate"
        result = attnscope("model", "generate", short, "--text", TEXT, "--truncate", "start", "--tokens", "4",
                           "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        rows = ref.tokens_txt(out)
        prompt = [r[1] for r in rows if not (len(r) > 4 and r[4] == "generated")]
        self.assertEqual(prompt, ids[:1] + ids[-(P - 4 - 1):])

    def test_bad_values_are_usage_errors(self):
        short, _ = twin_folders("llama-usage", "llama", hf.write_sentencepiece_bpe, 61)
        for args, message in [(["model", "run", short, "--text", "a", "--truncate", "middle", "--out", short + "-x"],
                               "--truncate: 'middle' is not start or end"),
                              (["model", "run", short, "--text", "a", "--truncate", "none", "--out", short + "-x"],
                               "--truncate: 'none' is not start or end"),
                              (["model", "run", short, "--ids", "1,2", "--truncate", "end", "--out", short + "-x"],
                               "--truncate: only with --text or --text-file"),
                              (["analyze", short, "--text", "a", "--truncate", "left"],
                               "--truncate: 'left' is not start or end")]:
            with self.subTest(args=args):
                result = attnscope(*args)
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertIn(message, result.stderr)
                self.assertFalse(os.path.exists(short + "-x"))


if __name__ == "__main__":
    unittest.main()
