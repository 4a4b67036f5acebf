"""scripts/export_attention.py end to end (Debian's python3-torch): the demo 3-layer
nn.TransformerEncoder with B=2 and key padding becomes a bundle equal to torch's own
per-head weights, which `attnscope export` reads back bit for bit; decoders give self- and
cross-attention layers; existing folders are never overwritten; the Hugging Face path
without transformers exits 2. The Hugging Face path's writing (write_hf_export: the model's
output attentions and the tokenizer's ids, pieces and masks as plain arrays) is checked with
torch-made maps here, and read back by `attnscope export`: every item's own tokens, readable
labels, padding masked. scripts/check_export_transformers.py checks the same against
transformers itself where it is installed.

Environment: ATTNSCOPE_BIN (the binary), ATTNSCOPE_TEST_TMP (scratch folder).
"""
import importlib.util
import json
import os
import subprocess
import sys
import unittest

import numpy as np
import torch

import hf_reference as hf
import reference as ref

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "export_attention.py")
spec = importlib.util.spec_from_file_location("export_attention", SCRIPT)
export_attention = importlib.util.module_from_spec(spec)
spec.loader.exec_module(export_attention)


def script(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=300)


def torch_encoder_weights(model, src, padding):
    """[layers, B, H, L, S]: each layer's self_attn called by hand on that layer's input.
    Training mode (dropout is 0) keeps torch off its fused paths, which would hand the layers
    nested tensors instead of [B, L, D]."""
    inputs = []
    hooks = [layer.register_forward_pre_hook(lambda _m, args: inputs.append(args[0])) for layer in model.layers]
    model.train()
    with torch.no_grad():
        model(src, src_key_padding_mask=padding)
        weights = [layer.self_attn(x, x, x, key_padding_mask=padding, need_weights=True,
                                   average_attn_weights=False)[1].numpy()
                   for layer, x in zip(model.layers, inputs)]
    for hook in hooks:
        hook.remove()
    return np.stack(weights)


class ExportAttentionScriptTest(unittest.TestCase):
    def test_demo_encoder_bundle_equals_torch_weights_and_reads_back(self):
        for container in ("npy", "npz"):
            with self.subTest(container=container):
                tmp = ref.case_dir("export_attention", "encoder_" + container)
                bundle = os.path.join(tmp, "bundle")
                proc = script("demo-encoder", "--out", bundle, *(["--npz"] if container == "npz" else []))
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertEqual(proc.stdout.split(), [bundle])
                self.assertEqual(sorted(os.listdir(tmp)), ["bundle"])  # no staging folder left
                if container == "npz":
                    with np.load(os.path.join(bundle, "attentions.npz")) as z:
                        maps = z["attentions"]
                else:
                    maps = np.load(os.path.join(bundle, "attentions.npy"))
                self.assertEqual((maps.dtype, maps.shape), (np.float32, (3, 2, 4, 6, 6)))

                model, src, padding, tokens = export_attention.demo_encoder(0)
                want = torch_encoder_weights(model, src, padding)
                np.testing.assert_allclose(maps, want, rtol=0, atol=1e-6)
                self.assertTrue(np.all(maps[:, 1, :, :, 4:] == 0))  # padded keys of item 1
                np.testing.assert_allclose(maps.sum(-1), 1.0, atol=1e-5)
                with open(os.path.join(bundle, "tokens.txt")) as f:
                    self.assertEqual(f.read().split("\n")[:-1], tokens)
                self.assertFalse(os.path.exists(os.path.join(bundle, "key_tokens.txt")))
                with open(os.path.join(bundle, "bundle.json")) as f:
                    meta = json.load(f)
                self.assertEqual(meta["layer_names"], [f"layers.{i}.self_attn" for i in range(3)])

                out = os.path.join(tmp, "out")
                for layer, b, h in ((0, 0, 0), (1, 1, 2), (2, 1, 3)):
                    exported = subprocess.run(
                        [ref.BIN, "export", bundle, "--what", "probs", "--layers", str(layer), "--heads", str(h),
                         "--batch", str(b), "--format", "npy", "--out", out], capture_output=True, text=True)
                    self.assertEqual(exported.returncode, 0, exported.stderr)
                    self.assertEqual(exported.stderr, "")  # every row is a distribution: no warning
                    self.assertEqual(np.load(exported.stdout.split()[0]).tobytes(), maps[layer, b, h].tobytes())

    def test_existing_folder_is_never_overwritten(self):
        tmp = ref.case_dir("export_attention", "exists")
        bundle = os.path.join(tmp, "bundle")
        os.makedirs(bundle)
        with open(os.path.join(bundle, "mine.txt"), "w") as f:
            f.write("keep")
        proc = script("demo-encoder", "--out", bundle)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("already exists", proc.stderr)
        self.assertEqual(os.listdir(bundle), ["mine.txt"])
        self.assertEqual(sorted(os.listdir(tmp)), ["bundle"])

    def test_decoder_self_and_cross_attention_become_layers(self):
        torch.manual_seed(1)
        layer = torch.nn.TransformerDecoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True)
        model = torch.nn.TransformerDecoder(layer, num_layers=2).eval()
        tgt = torch.randn(1, 5, 8)
        for name, src_len in (("same_length", 5), ("other_length", 7)):
            with self.subTest(case=name):
                tmp = ref.case_dir("export_attention", "decoder_" + name)
                memory = torch.randn(1, src_len, 8)
                causal = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1)
                written = export_attention.export_torch(model, lambda: model(tgt, memory, tgt_mask=causal),
                                                        os.path.join(tmp, "bundle"))
                if src_len == 5:
                    self.assertEqual(len(written), 1)
                    with open(os.path.join(written[0], "bundle.json")) as f:
                        names = json.load(f)["layer_names"]
                    self.assertEqual(names, ["layers.0.self_attn", "layers.0.multihead_attn",
                                             "layers.1.self_attn", "layers.1.multihead_attn"])
                    maps = np.load(os.path.join(written[0], "attentions.npy"))
                    self.assertEqual(maps.shape, (4, 1, 2, 5, 5))
                    self.assertTrue(np.all(np.triu(maps[0, 0, 0], 1) == 0))  # causal self-attention
                else:
                    self.assertEqual([os.path.basename(p) for p in written], ["self_attention", "cross_attention"])
                    cross = np.load(os.path.join(written[1], "attentions.npy"))
                    self.assertEqual(cross.shape, (2, 1, 2, 5, 7))
                np.testing.assert_allclose(np.load(os.path.join(written[-1], "attentions.npy")).sum(-1), 1.0,
                                           atol=1e-5)

    def test_hugging_face_path_without_transformers_exits_2(self):
        if importlib.util.find_spec("transformers") is not None:
            self.skipTest("transformers is installed here")
        tmp = ref.case_dir("export_attention", "hf")
        proc = script("hf", "bert-base-uncased", "--text", "hello", "--out", os.path.join(tmp, "bundle"))
        self.assertEqual(proc.returncode, 2)
        self.assertIn("transformers", proc.stderr)
        self.assertEqual(len(proc.stderr.strip().split("\n")), 1)
        self.assertFalse(os.path.exists(os.path.join(tmp, "bundle")))


def padded_softmax(seed, B, H, L, S, query_mask, key_mask, causal=False):
    """[B, H, L, S] float32 rows of torch.softmax over the allowed keys (padded keys, and keys
    after the query when causal, get exactly 0), as a Hugging Face model returns them."""
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(B, H, L, S, generator=g, dtype=torch.float64)
    allowed = torch.tensor(key_mask, dtype=torch.bool)[:, None, None, :].expand(B, H, L, S)
    if causal:
        allowed = allowed & torch.ones(L, S, dtype=torch.bool).tril()
    scores = scores.masked_fill(~allowed, torch.finfo(torch.float64).min)
    return torch.softmax(scores, dim=-1).float().numpy()


# GPT-2 style: byte-level pieces ("Ġ" space, "Ċ" newline, "Î±" the bytes of α), item 1 padded.
GPT2_ROWS = dict(
    ids=[[464, 3797, 198, 26180, 50256], [40, 1842, 50256, 50256, 50256]],
    pieces=[["The", "Ġcat", "Ċ", "Î±", "<|endoftext|>"], ["I", "Ġran", "<|endoftext|>", "<|endoftext|>",
                                                            "<|endoftext|>"]],
    special=[[False, False, False, False, True], [False, False, True, True, True]],
    mask=[[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]],
    piece_style="byte_level")
GPT2_LABELS = [["The", "\u2423cat", "\u21b5", "\u03b1", "<|endoftext|>"],
               ["I", "\u2423ran", "<|endoftext|>", "<|endoftext|>", "<|endoftext|>"]]


class HuggingFaceWritingTest(unittest.TestCase):
    """write_hf_export with plain arrays (no transformers), read back by attnscope."""

    def test_decoder_only_batch_has_every_items_tokens_and_its_padding(self):
        tmp = ref.case_dir("export_attention", "hf_decoder_only")
        rows = export_attention.TokenRows(**GPT2_ROWS)
        mask = np.array(GPT2_ROWS["mask"])
        layers = [padded_softmax(seed, 2, 3, 5, 5, mask, mask, causal=True) for seed in range(2)]
        bundle = os.path.join(tmp, "bundle")
        written = export_attention.write_hf_export(bundle, {"attentions": layers}, rows, model="tiny-gpt2",
                                                   notes="2 text(s)")
        self.assertEqual(written, [bundle])
        self.assertEqual(sorted(os.listdir(tmp)), ["bundle"])
        self.assertEqual(sorted(os.listdir(bundle)), ["attention_mask.npy", "attentions.npy", "bundle.json",
                                                      "tokens.json"])
        np.testing.assert_array_equal(np.load(os.path.join(bundle, "attentions.npy")), np.stack(layers))
        np.testing.assert_array_equal(np.load(os.path.join(bundle, "attention_mask.npy")), mask)
        with open(os.path.join(bundle, "tokens.json"), encoding="utf-8") as f:
            doc = json.load(f)
        self.assertEqual(doc["piece_style"], "byte_level")
        self.assertNotIn("key", doc)
        self.assertEqual([[e["token"] for e in row] for row in doc["query"]], GPT2_ROWS["pieces"])
        self.assertEqual([[e["id"] for e in row] for row in doc["query"]], GPT2_ROWS["ids"])
        self.assertEqual([[e["special"] for e in row] for row in doc["query"]], GPT2_ROWS["special"])

        out = os.path.join(tmp, "out")
        for b in range(2):
            with self.subTest(item=b):
                queries, keys = ref.csv_axes(ref.export_map(bundle, out, "probs", "csv", b))
                self.assertEqual(queries, GPT2_LABELS[b])  # item b's own tokens, readable
                self.assertEqual(keys, GPT2_LABELS[b])
                allowed = np.load(ref.export_map(bundle, out, "mask", "npy", b)) == 1
                want = (mask[b][:, None] == 1) & (mask[b][None, :] == 1)  # padded keys and query rows
                np.testing.assert_array_equal(allowed, want)
                probs = np.load(ref.export_map(bundle, out, "probs", "npy", b, layer=1, head=2))
                np.testing.assert_array_equal(probs, layers[1][b, 2])

    def test_encoder_decoder_gives_three_sub_bundles(self):
        tmp = ref.case_dir("export_attention", "hf_encoder_decoder")
        encoder = export_attention.TokenRows(
            ids=[[37, 1712, 5, 1], [8774, 1, 0, 0]], pieces=[["\u2581The", "\u2581cat", ".", "</s>"],
                                                            ["\u2581Hi", "</s>", "<pad>", "<pad>"]],
            special=[[False, False, False, True], [False, True, True, True]], mask=[[1, 1, 1, 1], [1, 1, 0, 0]],
            piece_style="plain")
        ids, dmask = export_attention.decoder_batch(0, 0, [[3, 206, 207], [12]], 2)
        self.assertEqual((ids, dmask), ([[0, 3, 206, 207], [0, 12, 0, 0]], [[1, 1, 1, 1], [1, 1, 0, 0]]))
        decoder = export_attention.TokenRows(
            ids=ids, pieces=[["<pad>", "\u2581", "<0xCE>", "<0xB1>"], ["<pad>", "\u2581Ja", "<pad>", "<pad>"]],
            special=[[True, False, False, False], [True, False, True, True]], mask=dmask, piece_style="plain")
        emask, dmask = np.array(encoder.mask), np.array(dmask)
        outputs = {
            "encoder_attentions": [padded_softmax(1, 2, 2, 4, 4, emask, emask) for _ in range(2)],
            "decoder_attentions": [padded_softmax(2, 2, 2, 4, 4, dmask, dmask, causal=True)] * 2,
            "cross_attentions": [padded_softmax(3 + l, 2, 2, 4, 4, dmask, emask) for l in range(2)],
        }
        bundle = os.path.join(tmp, "bundle")
        written = export_attention.write_hf_export(bundle, outputs, encoder, decoder, model="tiny-t5")
        parts = ["encoder_self_attention", "decoder_self_attention", "cross_attention"]
        self.assertEqual(written, [os.path.join(bundle, p) for p in parts])
        self.assertEqual(sorted(os.listdir(bundle)), sorted(parts))
        for part, key in zip(parts, ["encoder_attentions", "decoder_attentions", "cross_attentions"]):
            np.testing.assert_array_equal(np.load(os.path.join(bundle, part, "attentions.npy")),
                                          np.stack(outputs[key]))
        cross = os.path.join(bundle, "cross_attention")
        np.testing.assert_array_equal(np.load(os.path.join(cross, "attention_mask.npy")), emask)
        np.testing.assert_array_equal(np.load(os.path.join(cross, "query_mask.npy")), dmask)
        self.assertFalse(os.path.exists(os.path.join(bundle, "encoder_self_attention", "query_mask.npy")))
        with open(os.path.join(bundle, "cross_attention", "bundle.json")) as f:
            self.assertEqual(json.load(f)["layer_names"], ["cross attention 0", "cross attention 1"])

        out = os.path.join(tmp, "out")
        decoder_labels = [["<pad>", "\u2423", "\u03b1", "\u00b7"], ["<pad>", "\u2423Ja", "<pad>", "<pad>"]]
        encoder_labels = [["\u2423The", "\u2423cat", ".", "</s>"], ["\u2423Hi", "</s>", "<pad>", "<pad>"]]
        for b in range(2):
            with self.subTest(item=b):
                queries, keys = ref.csv_axes(ref.export_map(cross, out, "probs", "csv", b))
                self.assertEqual((queries, keys), (decoder_labels[b], encoder_labels[b]))
                allowed = np.load(ref.export_map(cross, out, "mask", "npy", b)) == 1
                np.testing.assert_array_equal(allowed, (dmask[b][:, None] == 1) & (emask[b][None, :] == 1))
                encoder_bundle = os.path.join(bundle, "encoder_self_attention")
                queries, keys = ref.csv_axes(ref.export_map(encoder_bundle, out, "probs", "csv", b))
                self.assertEqual((queries, keys), (encoder_labels[b], encoder_labels[b]))

    def test_bad_shapes_write_nothing(self):
        tmp = ref.case_dir("export_attention", "hf_bad")
        rows = export_attention.TokenRows(**GPT2_ROWS)
        bundle = os.path.join(tmp, "bundle")
        mask = np.ones((2, 6), dtype=int)
        cases = [
            ("attentions", {"attentions": [padded_softmax(0, 2, 3, 6, 6, mask, mask)]}, "tokens are [2, 5]"),
            ("no cross", {"encoder_attentions": [np.zeros((2, 1, 5, 5))]}, "no decoder_attentions"),
        ]
        for name, outputs, message in cases:
            with self.subTest(case=name):
                with self.assertRaises(export_attention.BundleError) as caught:
                    export_attention.write_hf_export(bundle, outputs, rows, rows if name == "no cross" else None)
                self.assertIn(message, str(caught.exception))
                self.assertEqual(os.listdir(tmp), [])
        with self.assertRaises(export_attention.BundleError):
            export_attention.decoder_batch(0, None, [[1], [1, 2]], 2)  # different lengths, no pad token
        with self.assertRaises(export_attention.BundleError):
            export_attention.decoder_batch(0, 0, [[1], [2], [3]], 2)  # 3 decoder texts for 2 texts

    def test_tokenizer_results_become_token_rows(self):
        """token_rows with a stand-in for a transformers tokenizer: pieces from
        convert_ids_to_tokens, special ids, and the piece style from tokenizer.json's
        pre-tokenizer / decoder as core/tokenizer decides it."""
        class Backend:
            def __init__(self, doc):
                self.doc = doc

            def to_str(self):
                return json.dumps(self.doc)

        class Tokenizer:
            all_special_ids = [0]
            vocab = {0: "<pad>", 5: "\u2581a", 6: "Ġb"}

            def __init__(self, doc):
                self.backend_tokenizer = Backend(doc)

            def convert_ids_to_tokens(self, ids):
                return [self.vocab[i] for i in ids]

        sequence = {"type": "Sequence", "pretokenizers": [{"type": "Split"}, {"type": "ByteLevel"}]}
        for doc, style in (({"pre_tokenizer": sequence, "decoder": None}, "byte_level"),
                           ({"pre_tokenizer": {"type": "Metaspace"}, "decoder": {"type": "Metaspace"}}, "plain"),
                           ({"pre_tokenizer": None, "decoder": {"type": "ByteLevel"}}, "byte_level")):
            rows = export_attention.token_rows(Tokenizer(doc), [[5, 0], [6, 5]], [[1, 0], [1, 1]])
            self.assertEqual(rows.piece_style, style)
            self.assertEqual(rows.pieces, [["\u2581a", "<pad>"], ["Ġb", "\u2581a"]])
            self.assertEqual(rows.special, [[False, True], [False, False]])

    def test_model_argument_may_be_a_local_folder(self):
        tmp = ref.case_dir("export_attention", "hf_folder")
        self.assertEqual(export_attention._pretrained_source(tmp), (os.path.abspath(tmp), {"local_files_only": True}))
        self.assertEqual(export_attention._pretrained_source("gpt2"), ("gpt2", {}))
        with self.assertRaises(export_attention.BundleError) as caught:
            export_attention._pretrained_source(os.path.join(tmp, "missing"))
        self.assertIn("not a model folder", str(caught.exception))



# The 2025-26 families (issue 38) through the Hugging Face path's writing: what transformers'
# output_attentions gives for a random folder of each (the float64 reference's maps, one per
# query head under GQA) and its byte-level tokens, written by write_hf_export, opens in
# attnscope with the labels and maps `attnscope model run` of the folder gives.
FAMILY_EXPORTS = [
    ("qwen3", dict(seed=91, G=2, head_dim=16, window=3, spelling=5, layer_types=["full_attention", "sliding_attention"])),
    ("smollm3", dict(seed=92, G=2, no_rope_interval=2)),
    ("gemma3_text", dict(seed=93, G=2, head_dim=16, window=3, pattern=2)),
    ("olmo2", dict(seed=94, G=2)),
    ("phi3", dict(seed=95, G=2, head_dim=16, rotary=0.75)),
]
FAMILY_TEXT = "def f(x): return x"


class FamilyExportTest(unittest.TestCase):
    def test_new_families_bundles_equal_attnscopes_own_run(self):
        pieces = hf.bytes_to_unicode()
        for family, options in FAMILY_EXPORTS:
            with self.subTest(family=family):
                tmp = ref.case_dir("export_attention", "family_" + family)
                folder = os.path.join(tmp, "model")
                cfg, tensors = hf.make_model(family, V=256, P=32, **options)
                stored = hf.write_folder(folder, cfg, tensors)
                hf.write_byte_level_bpe(folder)
                ids = list(FAMILY_TEXT.encode("utf-8"))  # byte-level BPE without merges: id = byte
                _, attns = hf.forward(cfg, stored, ids)
                layers = [a.unsqueeze(0).float().numpy() for a in attns]  # [B=1, H, L, L] per layer
                L = len(ids)
                rows = export_attention.TokenRows(ids=[ids], pieces=[[pieces[b] for b in ids]], special=[[False] * L],
                                                  mask=[[1] * L], piece_style="byte_level")
                bundle = os.path.join(tmp, "bundle")
                self.assertEqual(export_attention.write_hf_export(bundle, {"attentions": layers}, rows, model=family),
                                 [bundle])
                run = subprocess.run([ref.BIN, "model", "run", folder, "--text", FAMILY_TEXT, "--out",
                                      os.path.join(tmp, "run")], capture_output=True, text=True, timeout=60)
                self.assertEqual(run.returncode, 0, run.stderr)
                own = np.load(os.path.join(tmp, "run", "attentions.npy"))  # [N, 1, H, L, L]
                exported = np.load(os.path.join(bundle, "attentions.npy"))
                self.assertEqual(exported.shape, own.shape)
                np.testing.assert_allclose(exported, own, atol=1e-5, rtol=0)
                with open(os.path.join(tmp, "run", "tokens.txt"), encoding="utf-8") as f:
                    labels = [line.split("\t")[2] for line in f.read().splitlines()]
                out = os.path.join(tmp, "out")
                last = (len(layers) - 1, layers[0].shape[1] - 1)  # the last layer's last query head
                queries, keys = ref.csv_axes(ref.export_map(bundle, out, "probs", "csv", 0, *last))
                self.assertEqual((queries, keys), (labels, labels))
                read = np.load(ref.export_map(bundle, out, "probs", "npy", 0, *last))
                np.testing.assert_array_equal(read, exported[last[0], 0, last[1]])


if __name__ == "__main__":
    unittest.main()
