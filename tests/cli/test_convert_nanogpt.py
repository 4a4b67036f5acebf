"""scripts/convert_nanogpt.py: a randomly initialised GPT of nanoGPT's architecture, defined
here and saved the way nanoGPT's train.py saves checkpoints (and meta.pkl the way its
shakespeare_char/prepare.py does), converted, then run by `attnscope model run`: the
logits must equal this module's forward within 1e-3, each layer's attention within 1e-5.
"""
import math
import os
import pickle
import subprocess
import sys
import unittest

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import model_reference as ref

CONVERTER = os.path.join(ref.REPO, "scripts", "convert_nanogpt.py")
CHARS = "\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"  # shakespeare_char's 65


class LayerNorm(nn.Module):
    def __init__(self, n, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.bias = nn.Parameter(torch.zeros(n)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class SelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, bias):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=bias)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.n_head = n_head

    def forward(self, x, probs_out):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        att = F.softmax(att, dim=-1)
        probs_out.append(att[0].detach().numpy())
        return self.c_proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))


class MLP(nn.Module):
    def __init__(self, n_embd, bias):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, bias):
        super().__init__()
        self.ln_1 = LayerNorm(n_embd, bias)
        self.attn = SelfAttention(n_embd, n_head, bias)
        self.ln_2 = LayerNorm(n_embd, bias)
        self.mlp = MLP(n_embd, bias)

    def forward(self, x, probs_out):
        x = x + self.attn(self.ln_1(x), probs_out)
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """nanoGPT's GPT layout (module names as in its state dicts), weight tying included."""

    def __init__(self, n_layer, n_head, n_embd, block_size, vocab_size, bias, tie=True):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd), wpe=nn.Embedding(block_size, n_embd),
            h=nn.ModuleList(Block(n_embd, n_head, bias) for _ in range(n_layer)),
            ln_f=LayerNorm(n_embd, bias)))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        if tie:
            self.transformer.wte.weight = self.lm_head.weight
        for name, p in self.named_parameters():  # GPT-2 style init, then LayerNorms perturbed
            if p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.3 if "c_attn" in name else 0.1)
            elif "ln" in name and name.endswith("weight"):
                nn.init.normal_(p, 1.0, 0.2)
            else:
                nn.init.normal_(p, 0.0, 0.05)

    def forward(self, idx):
        probs = []
        x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(idx.shape[1]))
        for block in self.transformer.h:
            x = block(x, probs)
        return self.lm_head(self.transformer.ln_f(x)), probs


def save_checkpoint(model, model_args, path, compiled=False):
    state = model.state_dict()
    if compiled:  # torch.compile wraps the module: every key gets "_orig_mod."
        state = {"_orig_mod." + k: v for k, v in state.items()}
    torch.save({"model": state, "optimizer": {}, "model_args": model_args, "iter_num": 0,
                "best_val_loss": 1e9, "config": {}}, path)


def save_meta(path, chars):
    with open(path, "wb") as f:
        pickle.dump({"vocab_size": len(chars), "itos": dict(enumerate(chars)),
                     "stoi": {c: i for i, c in enumerate(chars)}}, f)


def convert(*args):
    return subprocess.run([sys.executable, CONVERTER, *args], capture_output=True, text=True, timeout=300)


class ConvertNanoGPT(unittest.TestCase):
    CASES = [
        # name, n_layer, n_head, n_embd, block_size, bias, tie, compiled, vocab
        ("shakespeare-char-bias", 2, 4, 32, 32, True, True, False, CHARS),
        ("no-bias-compiled", 3, 2, 24, 20, False, True, True, CHARS),
        ("untied-padded-vocab", 1, 3, 18, 16, True, False, False, CHARS[:20]),
    ]

    def test_converted_models_match_the_nanogpt_forward(self):
        for name, n_layer, n_head, n_embd, block_size, bias, tie, compiled, chars in self.CASES:
            with self.subTest(case=name):
                root = ref.case_dir("convert_nanogpt", name)
                torch.manual_seed(len(name))
                vocab_size = len(chars) + (3 if name.startswith("untied") else 0)  # nanoGPT may pad
                model = GPT(n_layer, n_head, n_embd, block_size, vocab_size, bias, tie).eval()
                args = dict(n_layer=n_layer, n_head=n_head, n_embd=n_embd, block_size=block_size,
                            bias=bias, vocab_size=vocab_size, dropout=0.0)
                ckpt, meta, out = (os.path.join(root, n) for n in ("ckpt.pt", "meta.pkl", "model"))
                save_checkpoint(model, args, ckpt, compiled)
                save_meta(meta, chars)
                result = convert(ckpt, meta, "--out", out)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual(os.path.exists(os.path.join(out, "lm_head.npy")), not tie)
                self.assertEqual(os.path.exists(os.path.join(out, "blocks.0.attn.b_q.npy")), bias)
                stoi = {c: i for i, c in enumerate(chars)}
                texts = ["F", "First Citizen:\nBefore we proceed", (chars * 9)[:block_size],
                         "ROMEO:\nBut soft!"[:block_size]]
                for n, text in enumerate(texts):
                    text = "".join(c for c in text if c in stoi)[:block_size]
                    attn, logits, _, _ = ref.model_outputs(out, text, os.path.join(root, f"run{n}"))
                    with torch.no_grad():
                        want_logits, want_probs = model(torch.tensor([[stoi[c] for c in text]]))
                    np.testing.assert_allclose(logits, want_logits[0].numpy(), atol=1e-3, rtol=0)
                    for layer, p in enumerate(want_probs):
                        np.testing.assert_allclose(attn[layer, 0], p, atol=1e-5, rtol=0)

    def test_float16_output_loads(self):
        root = ref.case_dir("convert_nanogpt", "float16")
        model = GPT(1, 2, 16, 8, len(CHARS), True)
        ckpt, meta, out = (os.path.join(root, n) for n in ("ckpt.pt", "meta.pkl", "model"))
        save_checkpoint(model, dict(n_layer=1, n_head=2, n_embd=16, block_size=8, bias=True,
                                    vocab_size=len(CHARS), dropout=0.0), ckpt)
        save_meta(meta, CHARS)
        self.assertEqual(convert(ckpt, meta, "--out", out, "--float16").returncode, 0)
        self.assertEqual(np.load(os.path.join(out, "tok_emb.npy")).dtype, np.float16)
        attn, _, _, _ = ref.model_outputs(out, "Hello", os.path.join(root, "run"))
        self.assertEqual(attn.shape, (1, 1, 2, 5, 5))

    def test_errors(self):
        root = ref.case_dir("convert_nanogpt", "errors")
        model = GPT(1, 2, 16, 8, 300, True)
        ckpt = os.path.join(root, "ckpt.pt")
        save_checkpoint(model, dict(n_layer=1, n_head=2, n_embd=16, block_size=8, bias=True,
                                    vocab_size=300, dropout=0.0), ckpt)
        result = convert(ckpt, "--out", os.path.join(root, "m"))
        self.assertEqual(result.returncode, 1)
        self.assertIn("needs META.pkl", result.stderr)
        self.assertFalse(os.path.exists(os.path.join(root, "m")))
        bogus = os.path.join(root, "bogus.pt")
        with open(bogus, "wb") as f:
            f.write(b"not a checkpoint")
        result = convert(bogus, "--out", os.path.join(root, "m"))
        self.assertEqual(result.returncode, 1)
        self.assertIn("bogus.pt: cannot read the checkpoint", result.stderr)
        os.makedirs(os.path.join(root, "taken"))
        result = convert(ckpt, "--out", os.path.join(root, "taken"))
        self.assertEqual(result.returncode, 1)
        self.assertIn("already exists", result.stderr)


if __name__ == "__main__":
    unittest.main()
