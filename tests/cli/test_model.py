"""`attnscope model run` against an independent float64 PyTorch forward pass of the
attnscope-model/1 format (model_reference.py), on random models of every kind the format
allows and on the shipped models; and the one-line errors for bad model folders and texts.

Tolerances: logits 1e-3, every layer's attention probabilities 1e-5 (absolute).
"""
import json
import os
import re
import resource
import shutil
import subprocess
import unittest

import numpy as np

import model_reference as ref

LOGITS_TOL = 1e-3
ATTN_TOL = 1e-5

# Random models: one row per kind the format allows.
RANDOM_MODELS = [
    # name, keyword arguments of write_random_model
    ("learned-mlp-untied-f32", dict(seed=1)),
    ("sinusoidal-mlp-tied-f16", dict(positional="sinusoidal", tied=True, dtype=np.float16,
                                     activation="gelu_tanh", seed=2)),
    ("learned-attn-only-tied-nobias", dict(mlp=False, tied=True, biases=False, N=3, seed=3)),
    ("sinusoidal-attn-only-f16", dict(positional="sinusoidal", mlp=False, dtype=np.float16, seed=4)),
    ("odd-sizes", dict(D=30, H=5, N=1, M=20, T=9, positional="sinusoidal", seed=5)),
    ("one-head-long", dict(D=16, H=1, N=2, T=64, seed=6)),
    ("bytes", dict(tokenizer="bytes", D=24, H=3, T=40, seed=7)),
]


def texts_for(model):
    """At least 10 texts: length 1, the full context, repeats, unknown characters."""
    T = model.cfg["max_len"]
    byte_level = model.cfg["tokenizer"] == "bytes"
    alphabet = "def f(x):\n\treturn x  # é€" if byte_level else "".join(model.vocab[1:])
    ascii_alphabet = "".join(c for c in alphabet if ord(c) < 128)
    rng = np.random.default_rng(T)
    texts = [alphabet[0], alphabet[:2], (ascii_alphabet * T)[:T], (ascii_alphabet[::-1] * T)[:T - 1]]
    while len(texts) < 12:
        n = int(rng.integers(1, T + 1))
        text = "".join(rng.choice(list(alphabet), n))
        while len(text.encode("utf-8") if byte_level else text) > T:
            text = text[:-1]
        texts.append(text)
    texts.append("aé€" if byte_level else "a?")
    return texts


class RandomModels(unittest.TestCase):
    def check_model(self, folder, texts, group):
        model = ref.FolderModel(folder)
        for n, text in enumerate(texts):
            with self.subTest(model=os.path.basename(folder), text=text):
                out = os.path.join(ref.case_dir(group, os.path.basename(folder)), str(n))
                attn, logits, tokens, _ = ref.model_outputs(folder, text, out)
                ids, unknown = model.encode(text)
                want_logits, want_attn = ref.forward(model, ids)
                L, N, H = len(ids), model.cfg["n_layers"], model.cfg["n_heads"]
                self.assertEqual(attn.shape, (N, 1, H, L, L))
                self.assertEqual(logits.shape, (L, model.cfg["vocab_size"]))
                self.assertEqual(attn.dtype, np.float32)
                np.testing.assert_allclose(logits, want_logits, atol=LOGITS_TOL, rtol=0)
                for layer in range(N):
                    np.testing.assert_allclose(attn[layer, 0], want_attn[layer], atol=ATTN_TOL, rtol=0,
                                               err_msg=f"layer {layer}")
                self.assertEqual(len(tokens), L)
                for t, line in enumerate(tokens):
                    cols = line.split("\t")
                    self.assertEqual(int(cols[0]), t)
                    self.assertEqual(int(cols[1]), ids[t])
                    self.assertEqual(cols[-1] == "unknown", unknown[t], line)

    def test_random_models_match_pytorch(self):
        for name, kwargs in RANDOM_MODELS:
            folder = os.path.join(ref.case_dir("model_random", name), "model")
            ref.write_random_model(folder, **kwargs)
            self.check_model(folder, texts_for(ref.FolderModel(folder)), "model_random_runs")

    def test_attention_is_not_trivial(self):
        """The random weights give peaked, differing heads (else the comparison proves little)."""
        folder = os.path.join(ref.case_dir("model_random", "peaked"), "model")
        ref.write_random_model(folder, seed=1)
        attn, _, _, _ = ref.model_outputs(folder, "abcdefgh()abcdefgh", folder + "-out")
        last_rows = attn[:, 0, :, -1, :]  # [N, H, L]
        self.assertGreater(last_rows.max(), 0.3)
        self.assertGreater(np.abs(attn[0, 0, 0] - attn[0, 0, 1]).max(), 0.05)

    def test_unknown_characters_get_the_unknown_id(self):
        folder = os.path.join(ref.case_dir("model_random", "unknown"), "model")
        ref.write_random_model(folder, seed=8)
        out = folder + "-out"
        result = ref.run_model(folder, "ab?Zé\tc", out, use_file=False)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(os.path.join(out, "tokens.txt"), encoding="utf-8") as f:
            rows = [line.split("\t") for line in f.read().splitlines()]
        self.assertEqual([r[2] for r in rows], ["a", "b", "?", "Z", "é", "\\t", "c"])
        self.assertEqual([int(r[1]) for r in rows][2:6], [0, 0, 0, 0])
        self.assertEqual([len(r) == 4 and r[3] == "unknown" for r in rows],
                         [False, False, True, True, True, True, False])
        self.assertIn("4 outside the vocabulary -> unknown id 0", result.stdout)

    def test_ids_run_as_the_text_does(self):
        """One runtime for both folder kinds: --ids on an attnscope-model/1 folder (the ids of a
        text's tokens.txt) gives that text's maps and logits bit for bit, and an id outside
        the vocabulary is one line naming config.json."""
        folder = os.path.join(ref.case_dir("model_random", "ids"), "model")
        ref.write_random_model(folder, seed=10)
        text_out, ids_out = folder + "-text", folder + "-ids"
        attn, logits, tokens, _ = ref.model_outputs(folder, "abc(d)ab", text_out)
        ids = [line.split("\t")[1] for line in tokens]
        result = subprocess.run([ref.BIN, "model", "run", folder, "--ids", ",".join(ids), "--out", ids_out],
                                capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        np.testing.assert_array_equal(np.load(os.path.join(ids_out, "attentions.npy")), attn)
        np.testing.assert_array_equal(np.load(os.path.join(ids_out, "logits.npy")), logits)
        V = ref.FolderModel(folder).cfg["vocab_size"]
        bad = subprocess.run([ref.BIN, "model", "run", folder, "--ids", "1,%d" % V, "--out", folder + "-bad"],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(bad.returncode, 1)
        self.assertIn("token id %d is outside the vocabulary (vocab_size %d in %s)"
                      % (V, V, os.path.join(folder, "config.json")), bad.stderr)
        self.assertFalse(os.path.exists(folder + "-bad"))

    def test_top5_predictions_printed(self):
        folder = os.path.join(ref.case_dir("model_random", "top5"), "model")
        ref.write_random_model(folder, seed=9)
        model = ref.FolderModel(folder)
        _, logits, _, stdout = ref.model_outputs(folder, "abc(d", folder + "-out")
        want, _ = ref.forward(model, model.encode("abc(d")[0])
        p = np.exp(want[-1] - want[-1].max())
        p /= p.sum()
        order = np.argsort(-p)[:5]
        lines = [line.strip() for line in stdout.splitlines() if line.strip()[:2] in ("1.", "2.", "3.", "4.", "5.")]
        self.assertEqual(len(lines), 5, stdout)
        for rank, (line, token_id) in enumerate(zip(lines, order)):
            label = model.vocab[token_id].replace("\n", "\\n")
            self.assertTrue(line.startswith(f"{rank + 1}. '{label}'"), (line, label))
            self.assertIn(f"{p[token_id]:.4f}", line)
            self.assertIn(f"(id {token_id})", line)


def shipped(name):
    return os.path.join(ref.SHIPPED, name)


def load_training(name):
    with open(os.path.join(shipped(name), "training.json")) as f:
        return json.load(f)


# ---------------------------------------------------------------- pattern scores (own code)
# Written from training.json's "pattern_definitions", independently of the training script.

def python_scan(text):
    """Per position: (opening quote of the string it is inside, innermost open bracket)."""
    string_opener = [None] * len(text)
    bracket_opener = [None] * len(text)
    open_brackets = []
    pos = 0
    while pos < len(text):
        ch = text[pos]
        if ch == "#":
            end = text.find("\n", pos)
            pos = len(text) if end < 0 else end
        elif ch in "'\"":
            delim = ch * 3 if text.startswith(ch * 3, pos) else ch
            start = pos
            pos += len(delim)
            while pos < len(text):
                if text[pos] == "\\":
                    for q in (pos, pos + 1):
                        if q < len(text):
                            string_opener[q] = start
                    pos += 2
                elif text.startswith(delim, pos):
                    pos += len(delim)
                    break
                elif text[pos] == "\n" and len(delim) == 1:
                    break
                else:
                    string_opener[pos] = start
                    pos += 1
        else:
            if ch in "([{":
                open_brackets.append(pos)
            elif ch in ")]}":
                if open_brackets:
                    open_brackets.pop()
            elif open_brackets:
                bracket_opener[pos] = open_brackets[-1]
            pos += 1
    return string_opener, bracket_opener


def code_pairs(text):
    strings, brackets = python_scan(text)
    newline_before = []
    last = None
    for t, ch in enumerate(text):
        newline_before.append(last)
        if ch == "\n":
            last = t
    return {"previous_token": [(t, t - 1) for t in range(1, len(text))],
            "in_string": [(t, o) for t, o in enumerate(strings) if o is not None],
            "open_bracket": [(t, o) for t, o in enumerate(brackets) if o is not None],
            "newline": [(t, o) for t, o in enumerate(newline_before) if o is not None]}


class ScoreSums:
    def __init__(self):
        self.sums, self.counts = {}, {}

    def add(self, attn, pairs):
        """attn [N, 1, H, L, L] from attnscope; pairs: pattern -> [(query, key)]."""
        for name, pp in pairs.items():
            if not pp:
                continue
            q, k = np.array(pp).T
            self.sums[name] = self.sums.get(name, 0.0) + attn[:, 0][:, :, q, k].astype(np.float64).sum(-1)
            self.counts[name] = self.counts.get(name, 0) + len(pp)

    def scores(self):
        return {name: self.sums[name] / self.counts[name] for name in self.sums}


@unittest.skipUnless(os.path.isdir(shipped("python-code")), "python-code model not shipped")
class ShippedPythonCode(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = shipped("python-code")
        cls.training = load_training("python-code")
        cls.cfg = ref.FolderModel(cls.folder).cfg
        with open(os.path.join(cls.folder, "validation.txt"), encoding="utf-8", newline="") as f:
            text = f.read()
        T = cls.cfg["max_len"]
        cls.windows = [text[k * T:k * T + T + 1] for k in range((len(text) - 1) // T)]
        # Every window once through attnscope: logits for the loss, attention for the scores.
        cls.runs = []
        root = ref.case_dir("model_shipped", "python-code")
        for n, w in enumerate(cls.windows):
            attn, logits, _, _ = ref.model_outputs(cls.folder, w[:-1], os.path.join(root, f"w{n}"))
            cls.runs.append((w, attn, logits))

    def test_size_and_format(self):
        total = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(ref.SHIPPED) for f in fs)
        self.assertLess(total, 5 * 1024 * 1024)
        self.assertEqual(self.cfg["format"], "attnscope-model/1")

    def test_validation_loss_matches_training_json(self):
        model = ref.FolderModel(self.folder)
        self.assertEqual(len(self.windows), self.training["validation"]["windows"])
        nats, count = 0.0, 0
        for w, _, logits in self.runs:
            ids, _ = model.encode(w)
            z = logits.astype(np.float64)
            logp = z - z.max(-1, keepdims=True)
            logp -= np.log(np.exp(logp).sum(-1, keepdims=True))
            nats -= logp[np.arange(len(ids) - 1), ids[1:]].sum()
            count += len(ids) - 1
        bpc = nats / count / np.log(2)
        self.assertAlmostEqual(bpc, self.training["validation_bpc"], delta=1e-3)

    def test_forward_matches_pytorch(self):
        model = ref.FolderModel(self.folder)
        for w, attn, logits in self.runs[:4]:
            want_logits, want_attn = ref.forward(model, model.encode(w[:-1])[0])
            np.testing.assert_allclose(logits, want_logits, atol=LOGITS_TOL, rtol=0)
            for layer, a in enumerate(want_attn):
                np.testing.assert_allclose(attn[layer, 0], a, atol=ATTN_TOL, rtol=0)

    def test_pattern_scores_meet_training_json(self):
        sums = ScoreSums()
        for w, attn, _ in self.runs:
            sums.add(attn, code_pairs(w[:-1]))
        root = ref.case_dir("model_shipped", "python-code-probes")
        for n, probe in enumerate(self.training["probes"]["induction"]):
            attn, _, _, _ = ref.model_outputs(self.folder, probe, os.path.join(root, f"p{n}"))
            half = len(probe) // 2
            sums.add(attn, {"induction": [(t, t - half + 1) for t in range(half, 2 * half)]})
        scores = sums.scores()
        claimed = self.training["pattern_scores"]
        self.assertEqual(set(scores), set(claimed))
        for name, value in scores.items():
            np.testing.assert_allclose(value, np.array(claimed[name]), atol=2e-3, err_msg=name)
            best = self.training["notable_heads"][name]
            self.assertGreaterEqual(value[best["layer"], best["head"]], best["score"] - 2e-3, name)
        self.assertGreaterEqual(scores["previous_token"].max(), 0.3)  # a clear previous-token head


@unittest.skipUnless(os.path.isdir(shipped("reverse-digits")), "reverse-digits model not shipped")
class ShippedReverseDigits(unittest.TestCase):
    def test_accuracy_and_anti_diagonal_match_training_json(self):
        folder = shipped("reverse-digits")
        training = load_training("reverse-digits")
        model = ref.FolderModel(folder)
        with open(os.path.join(folder, "eval.txt")) as f:
            lines = f.read().split()
        self.assertEqual(len(lines), training["eval"]["examples"])
        root = ref.case_dir("model_shipped", "reverse-digits")
        solved = 0
        sums = ScoreSums()
        for n, line in enumerate(lines):
            text = line[:-1]
            attn, logits, _, _ = ref.model_outputs(folder, text, os.path.join(root, f"e{n}"))
            if n < 3:
                want_logits, want_attn = ref.forward(model, model.encode(text)[0])
                np.testing.assert_allclose(logits, want_logits, atol=LOGITS_TOL, rtol=0)
                np.testing.assert_allclose(attn[0, 0], want_attn[0], atol=ATTN_TOL, rtol=0)
            eq = text.index("=")
            want = model.encode(line[eq + 1:])[0]
            solved += bool((logits[eq:].argmax(-1) == np.array(want)).all())
            sums.add(attn, {"reverse_source": [(eq + j, eq - 1 - j) for j in range(eq)]})
        self.assertEqual(solved / len(lines), training["accuracy"])
        self.assertGreaterEqual(training["accuracy"], 0.99)
        score = sums.scores()["reverse_source"]
        np.testing.assert_allclose(score, np.array(training["pattern_scores"]["reverse_source"]), atol=2e-3)
        self.assertGreater(score.max(), 0.9)  # a crisp anti-diagonal


class BadInput(unittest.TestCase):
    def setUp(self):
        self.root = ref.case_dir("model_errors", self.id().split(".")[-1])
        self.folder = os.path.join(self.root, "model")
        ref.write_random_model(self.folder, seed=11, T=16)
        self.out = os.path.join(self.root, "out")

    def check(self, needle, text="abc", code=1, folder=None, extra=()):
        result = ref.run_model(folder or self.folder, text, self.out, use_file=False) if not extra else \
            ref.subprocess.run([ref.BIN, "model", "run", folder or self.folder, *extra, "--out", self.out],
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, code, result.stderr)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertIn(needle, lines[0])
        self.assertFalse(os.path.exists(self.out), "nothing may be written")
        return lines[0]

    def test_text_longer_than_the_context(self):
        line = self.check("text has more than 16 characters but model's context is 16", text="a" * 17)
        self.assertIn("config.json", line)

    def test_empty_text(self):
        self.check("the text is empty", text="")

    def test_missing_tensor_names_the_file(self):
        os.remove(os.path.join(self.folder, "blocks.1.attn.w_k.npy"))
        self.check("blocks.1.attn.w_k.npy: missing")

    def test_misshaped_tensor_names_the_file(self):
        np.save(os.path.join(self.folder, "blocks.0.mlp.w_in.npy"), np.zeros((32, 48), np.float32))
        self.check("blocks.0.mlp.w_in.npy: shape [32, 48] but the config needs [48, 32]")

    def test_wrong_format_string(self):
        path = os.path.join(self.folder, "config.json")
        with open(path) as f:
            cfg = json.load(f)
        cfg["format"] = "attnscope-model/2"
        with open(path, "w") as f:
            json.dump(cfg, f)
        self.check('config.json: "format" is "attnscope-model/2" but must be "attnscope-model/1"')

    def test_config_fields(self):
        cases = [
            ("n_heads", 5, '"n_heads" 5 does not divide d_model 32'),
            ("tokenizer", "words", '"tokenizer" is "words" but must be one of "chars", "bytes"'),
            ("positional", None, '"positional" must be a string'),
            ("ln_eps", -1, '"ln_eps" must be a number in (0, 1]'),
            ("mlp", "yes", '"mlp" must be true or false'),
            ("unk_id", 99, '"unk_id" must be an integer in 0..'),
        ]
        path = os.path.join(self.folder, "config.json")
        with open(path) as f:
            good = json.load(f)
        for key, value, needle in cases:
            with self.subTest(key=key):
                cfg = dict(good)
                cfg[key] = value
                with open(path, "w") as f:
                    json.dump(cfg, f)
                self.check(needle)
        cfg = dict(good)
        del cfg["d_mlp"]
        with open(path, "w") as f:
            json.dump(cfg, f)
        self.check('"d_mlp" is missing')

    def test_inconsistent_files(self):
        np.save(os.path.join(self.folder, "lm_head.npy"), np.zeros((13, 32), np.float32))
        path = os.path.join(self.folder, "config.json")
        with open(path) as f:
            cfg = json.load(f)
        cfg["tied_embeddings"] = True
        with open(path, "w") as f:
            json.dump(cfg, f)
        self.check('lm_head.npy: present but config.json says "tied_embeddings": true')

    def test_vocab_problems(self):
        path = os.path.join(self.folder, "vocab.json")
        for content, needle in (("[\"a\", \"b\"]", "must be a JSON list of vocab_size = 13 strings"),
                                ("[\"<unk>\", \"ab\"" + ", \"x\"" * 11 + "]", 'entry 1 ("ab") is not one character'),
                                ("{", "vocab.json: not valid JSON")):
            with self.subTest(content=content[:10]):
                with open(path, "w") as f:
                    f.write(content)
                self.check(needle)

    def test_numbers_too_large_for_a_double_name_the_file(self):
        # Regression (issue 12, found by fuzz_model): nlohmann's out_of_range for 1e400 escaped
        # without the file's name.
        for name, text in (("config.json", None), ("vocab.json", "[\"<unk>\", 1e400]"),
                           ("training.json", "{\"caption\": -1e400}")):
            with self.subTest(name=name):
                path = os.path.join(self.folder, name)
                original = None
                if os.path.exists(path):
                    with open(path) as f:
                        original = f.read()
                if text is None:
                    text = original.replace("{", "{\"zzz\": 1e400, ", 1)
                with open(path, "w") as f:
                    f.write(text)
                line = self.check("number overflow")
                self.assertIn(name + ": not valid JSON", line)
                if original is None:
                    os.remove(path)
                else:
                    with open(path, "w") as f:
                        f.write(original)

    def test_not_a_folder(self):
        self.check("not a model folder", folder=os.path.join(self.root, "nope"))

    def test_endless_files_and_folders_are_refused(self):
        # Regression (issue 12): --text-file /dev/zero was read until memory ran out, a folder
        # was read as an empty text, and a model JSON file that never ends (a link to /dev/zero)
        # was read whole.
        self.check("/dev/zero: larger than 16 MiB, not a text for a model", extra=("--text-file", "/dev/zero"))
        self.check(self.root + ": cannot read (Is a directory)", extra=("--text-file", self.root))
        for name in ("config.json", "vocab.json", "training.json"):
            with self.subTest(name=name):
                path = os.path.join(self.folder, name)
                kept = path + ".kept"
                if os.path.exists(path):
                    os.rename(path, kept)
                os.symlink("/dev/zero", path)
                self.check(name + ": larger than 64 MiB, not a model's JSON file")
                os.remove(path)
                if os.path.exists(kept):
                    os.rename(kept, path)

    @unittest.skipIf(os.environ.get("ATTNSCOPE_SANITIZED") == "1",
                     "AddressSanitizer reserves terabytes of address space: no ulimit -v under it")
    def test_sinusoidal_table_beyond_memory_is_refused_with_the_estimate(self):
        # The largest table config.json allows: max_len x d_model = 65536 x 65536 float32 =
        # 16 GiB, which no file backs. Under a 4 GiB address-space limit (ulimit -v) it must be
        # refused with the estimate before anything is allocated, on any machine.
        path = os.path.join(self.folder, "config.json")
        with open(path) as f:
            cfg = json.load(f)
        cfg.update(d_model=65536, max_len=65536, positional="sinusoidal")
        with open(path, "w") as f:
            json.dump(cfg, f)
        os.remove(os.path.join(self.folder, "pos_emb.npy"))
        np.save(os.path.join(self.folder, "tok_emb.npy"), np.zeros((cfg["vocab_size"], 65536), np.float32))
        limit = 4 << 30
        result = ref.subprocess.run(
            [ref.BIN, "model", "run", self.folder, "--text", "abc", "--out", self.out], capture_output=True,
            text=True, timeout=60, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)))
        self.assertEqual(result.returncode, 1, result.stderr)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertIn("config.json: sinusoidal positions [max_len, d_model]: ", lines[0])
        match = re.search(r"needs ([0-9.]+) GiB but only ([0-9.]+) GiB is available", lines[0])
        self.assertIsNotNone(match, lines[0])
        self.assertAlmostEqual(float(match.group(1)), 16.0, places=3)
        self.assertLess(float(match.group(2)), 4.0)  # what the limit leaves, not the machine's memory
        self.assertFalse(os.path.exists(self.out))

    def test_usage_errors(self):
        for extra, needle in ((("--text", "a", "--text-file", "x"), "excludes"),
                              ((), "give --text TEXT, --text-file FILE or --ids IDS")):
            with self.subTest(extra=extra):
                result = ref.subprocess.run([ref.BIN, "model", "run", self.folder, *extra, "--out", self.out],
                                            capture_output=True, text=True, timeout=60)
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertIn(needle, result.stderr)
                self.assertFalse(os.path.exists(self.out))

    def test_missing_text_file(self):
        self.check("nope.txt: cannot open (No such file or directory)", extra=("--text-file", os.path.join(self.root, "nope.txt")))

    def test_existing_outputs_are_replaced_atomically(self):
        os.makedirs(self.out)
        with open(os.path.join(self.out, "mine.txt"), "w") as f:
            f.write("keep")
        result = ref.run_model(self.folder, "abc", self.out, use_file=False)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(sorted(os.listdir(self.out)), ["attentions.npy", "logits.npy", "mine.txt", "tokens.txt"])
        result = ref.run_model(self.folder, "a" * 99, self.out, use_file=False)
        self.assertEqual(result.returncode, 1)
        self.assertEqual(np.load(os.path.join(self.out, "logits.npy")).shape[0], 3)  # the earlier run's, intact
        shutil.rmtree(self.out)


if __name__ == "__main__":
    unittest.main()
