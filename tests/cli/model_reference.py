"""An independent PyTorch implementation of the attnscope-model/1 folder format, and random
models written in it, for checking `attnscope model run`.

Written from the format's description in docs/models.md ("Model folders"), sharing no code with
attnscope or scripts/train_tiny_lm.py: it reads the same files and computes in float64.

Run with /usr/bin/python3 (the interpreter that has numpy and torch).
"""
import json
import math
import os
import shutil
import subprocess

import numpy as np
import torch

BIN = os.environ.get("ATTNSCOPE_BIN", "")
TMP = os.environ.get("ATTNSCOPE_TEST_TMP", "/tmp/attnscope-tests")
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SHIPPED = os.path.join(REPO, "assets", "models")


def case_dir(group, name):
    path = os.path.join(TMP, group, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


# ---------------------------------------------------------------- reading a folder

class FolderModel:
    """config, vocab and float64 tensors of one model folder."""

    def __init__(self, folder):
        with open(os.path.join(folder, "config.json")) as f:
            self.cfg = json.load(f)
        vocab_path = os.path.join(folder, "vocab.json")
        self.vocab = None
        if os.path.exists(vocab_path):
            with open(vocab_path) as f:
                self.vocab = json.load(f)
        self.folder = folder

    def tensor(self, name, required=True):
        path = os.path.join(self.folder, name + ".npy")
        if not os.path.exists(path):
            assert not required, path
            return None
        return torch.from_numpy(np.load(path).astype(np.float64))

    def encode(self, text):
        """ids and unknown flags: chars = one id per Unicode character, bytes = per byte."""
        cfg = self.cfg
        if cfg["tokenizer"] == "bytes":
            data = text.encode("utf-8")
            return ([b if b < cfg["vocab_size"] else cfg["unk_id"] for b in data],
                    [b >= cfg["vocab_size"] for b in data])
        index = {c: i for i, c in enumerate(self.vocab) if len(c) == 1}
        ids = [index.get(c, cfg["unk_id"]) for c in text]
        return ids, [i == cfg["unk_id"] for i in ids]  # the unknown id is flagged even when its entry matched


def sinusoidal(max_len, d):
    """Seed 003: pe[p, 2i] = sin(p * exp(-2i ln(10000) / d)), pe[p, 2i+1] = cos(same)."""
    pe = torch.zeros(max_len, d, dtype=torch.float64)
    position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d, 2, dtype=torch.float64) * -(math.log(10000.0) / d))
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)[:, :d // 2]
    return pe


def forward(model, ids, residuals=None, cache=None):
    """logits [L, V] and the attention probabilities of every layer, [N][H, L, L] (float64).
    residuals, a list: gets the embeddings and the residual stream after each layer, [L, D] each.
    cache = (W, k): a KV cache's window and sinks: a query sees the first k keys, itself and
    the W keys before it (attnscope model generate --window W --sinks k)."""
    keep = residuals.append if residuals is not None else (lambda v: None)
    cfg = model.cfg
    D, H, L = cfg["d_model"], cfg["n_heads"], len(ids)
    d = D // H
    eps = cfg["ln_eps"]
    t = model.tensor
    idx = torch.tensor(ids)
    pos = t("pos_emb") if cfg["positional"] == "learned" else sinusoidal(cfg["max_len"], D)
    x = t("tok_emb")[idx] + pos[:L]
    keep(x)

    def ln(v, prefix):
        return torch.nn.functional.layer_norm(v, (D,), t(prefix + ".weight"), t(prefix + ".bias"), eps)

    def linear(v, w, b):
        wt, bt = t(w), t(b, required=False)
        return v @ wt.T + (bt if bt is not None else 0.0)

    attentions = []
    for i in range(cfg["n_layers"]):
        p = f"blocks.{i}."
        h = ln(x, p + "ln1")
        q, k, v = (linear(h, p + f"attn.w_{n}", p + f"attn.b_{n}").view(L, H, d).transpose(0, 1)
                   for n in "qkv")
        scores = q @ k.transpose(-1, -2) / math.sqrt(d)
        hidden_keys = torch.ones(L, L, dtype=torch.bool).triu(1)
        if cache is not None:
            i, j = torch.arange(L).unsqueeze(1), torch.arange(L).unsqueeze(0)
            hidden_keys |= ((i - j) > cache[0]) & (j >= cache[1])
        scores = scores.masked_fill(hidden_keys, float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        attentions.append(probs.numpy())
        context = (probs @ v).transpose(0, 1).reshape(L, D)
        x = x + linear(context, p + "attn.w_o", p + "attn.b_o")
        if cfg["mlp"]:
            hidden = linear(ln(x, p + "ln2"), p + "mlp.w_in", p + "mlp.b_in")
            approximate = "tanh" if cfg["activation"] == "gelu_tanh" else "none"
            x = x + linear(torch.nn.functional.gelu(hidden, approximate=approximate),
                           p + "mlp.w_out", p + "mlp.b_out")
        keep(x)
    return output_head(model, x).numpy(), attentions


def output_head(model, x):
    """logits [L, V] = ln_f(x [L, D]) lm_head^T."""
    cfg, t = model.cfg, model.tensor
    head = t("tok_emb") if cfg["tied_embeddings"] else t("lm_head")
    x = torch.nn.functional.layer_norm(x, (cfg["d_model"],), t("ln_f.weight"), t("ln_f.bias"), cfg["ln_eps"])
    return x @ head.T


def lens_probs(model, ids):
    """The logit lens: softmax of the output head on every residual, [N + 1, L, V] (float64)."""
    residuals = []
    forward(model, ids, residuals)
    return np.stack([torch.softmax(output_head(model, x), dim=-1).numpy() for x in residuals])


# ---------------------------------------------------------------- random models

def write_random_model(folder, *, D=32, H=4, N=2, T=24, M=48, vocab="abcdefgh ()\n", tokenizer="chars",
                       positional="learned", mlp=True, tied=False, dtype=np.float32,
                       activation="gelu", biases=True, seed=0, unk_label="<unk>"):
    """A model with random weights large enough that heads differ and softmax is not flat."""
    rng = np.random.default_rng(seed)
    os.makedirs(folder, exist_ok=True)
    if tokenizer == "chars":
        tokens = [unk_label] + list(vocab)
        V = len(tokens)
    else:
        tokens = None
        V = 256
    cfg = {"format": "attnscope-model/1", "name": os.path.basename(folder),
           "description": "random weights (test)", "n_layers": N, "n_heads": H, "d_model": D,
           "d_mlp": M if mlp else 0, "max_len": T, "vocab_size": V, "tokenizer": tokenizer,
           "unk_id": 0, "positional": positional, "activation": activation, "ln_eps": 1e-5,
           "tied_embeddings": tied, "mlp": mlp}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f)
    if tokens is not None:
        with open(os.path.join(folder, "vocab.json"), "w") as f:
            json.dump(tokens, f)

    def save(name, *shape, scale=1.0, offset=0.0):
        arr = (rng.standard_normal(shape) * scale + offset).astype(dtype)
        np.save(os.path.join(folder, name + ".npy"), arr)

    save("tok_emb", V, D)
    if positional == "learned":
        save("pos_emb", T, D, scale=0.5)
    for i in range(N):
        p = f"blocks.{i}."
        save(p + "ln1.weight", D, scale=0.2, offset=1.0)
        save(p + "ln1.bias", D, scale=0.1)
        for n in "qkvo":
            save(p + f"attn.w_{n}", D, D, scale=1.5 / math.sqrt(D) if n in "qk" else 1.0 / math.sqrt(D))
            if biases:
                save(p + f"attn.b_{n}", D, scale=0.1)
        if mlp:
            save(p + "ln2.weight", D, scale=0.2, offset=1.0)
            save(p + "ln2.bias", D, scale=0.1)
            save(p + "mlp.w_in", M, D, scale=1.0 / math.sqrt(D))
            save(p + "mlp.b_in", M, scale=0.1)
            save(p + "mlp.w_out", D, M, scale=1.0 / math.sqrt(M))
            save(p + "mlp.b_out", D, scale=0.1)
    save("ln_f.weight", D, scale=0.2, offset=1.0)
    save("ln_f.bias", D, scale=0.1)
    if not tied:
        save("lm_head", V, D, scale=1.0 / math.sqrt(D))
    return cfg


# ---------------------------------------------------------------- running attnscope

def run_model(folder, text, out, use_file=True):
    """Runs `attnscope model run`; returns the CompletedProcess."""
    if use_file:
        path = out + ".txt"
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        args = ["--text-file", path]
    else:
        args = ["--text", text]
    return subprocess.run([BIN, "model", "run", folder, *args, "--out", out],
                          capture_output=True, text=True, timeout=120)


def tokens_txt(out):
    """tokens.txt of a run's output folder: each line's tab-separated columns."""
    with open(os.path.join(out, "tokens.txt"), encoding="utf-8") as f:
        return [line.split("\t") for line in f.read().splitlines()]


def fresh(out):
    """An output folder of an earlier run is removed (exports add files beside old ones)."""
    shutil.rmtree(out, ignore_errors=True)
    return out


def model_outputs(folder, text, out):
    """attentions [N, 1, H, L, L], logits [L, V], tokens.txt lines from attnscope."""
    result = run_model(folder, text, out)
    assert result.returncode == 0, result.stderr
    with open(os.path.join(out, "tokens.txt"), encoding="utf-8") as f:
        tokens = f.read().splitlines()
    return (np.load(os.path.join(out, "attentions.npy")), np.load(os.path.join(out, "logits.npy")),
            tokens, result.stdout)
