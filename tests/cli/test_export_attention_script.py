"""scripts/export_attention.py end to end (Debian's python3-torch): the demo 3-layer
nn.TransformerEncoder with B=2 and key padding becomes a bundle equal to torch's own
per-head weights, which `attnscope export` reads back bit for bit; decoders give self- and
cross-attention layers; existing folders are never overwritten; the Hugging Face path
without transformers exits 2.

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


if __name__ == "__main__":
    unittest.main()
