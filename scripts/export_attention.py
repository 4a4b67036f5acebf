#!/usr/bin/env python3
"""Write attention bundles that attnscope opens (`attnscope BUNDLE`, `attnscope export BUNDLE`).

A bundle is a folder with
  attentions.npy  float32 [layers, B, H, L, S]: every attention layer's per-head probabilities
  tokens.txt      L query labels, one per line (batch item 0's)
  key_tokens.txt  S key labels, when S differs from L
  bundle.json     {"model": ..., "layer_names": [...], "notes": ...}

Two sources:
  1. Any PyTorch model built from nn.MultiheadAttention modules (nn.TransformerEncoder,
     nn.TransformerDecoder, your own blocks). From Python:
         from export_attention import export_torch
         export_torch(model, lambda: model(src, src_key_padding_mask=pad), "bundle", tokens=words)
     Every nn.MultiheadAttention call during that forward becomes one layer, in call order
     (self- and cross-attention alike), named by its module path ("layers.0.self_attn").
     The modules are asked for per-head weights (need_weights=True,
     average_attn_weights=False) while the forward runs, and PyTorch's fused fast paths
     (which skip the module's Python forward) are switched off for that forward only.
     Layers whose [B, H, L, S] differ (cross-attention over a source of another length) go
     to sub-bundles OUT/self_attention and OUT/cross_attention.
  2. Hugging Face transformers models (needs the transformers package):
         export_attention.py hf MODEL_OR_PATH --text "The cat sat" --out bundle
     runs the model with output_attentions=True; tokens come from the model's tokenizer and
     the layer and head counts from its config (grouped-query models report one map per
     query head). Without transformers installed it says so and exits 2.

And a self-contained example (used by the tests):
         export_attention.py demo-encoder --out bundle
  writes a seeded 3-layer nn.TransformerEncoder (d_model 16, 4 heads) on B=2 sequences of
  lengths 6 and 4 (key padding).

Run with /usr/bin/python3 on Debian (python3-torch, python3-numpy). Exit status: 0 ok,
1 bad input (one line naming the problem), 2 usage or a missing package.
"""
import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile

import numpy as np

try:
    import torch
    from torch import nn
except ImportError:  # pragma: no cover - depends on the machine
    torch = None
    nn = None


class BundleError(Exception):
    """Bad input: one line for the user, exit 1."""


# ----------------------------------------------------------------------------- writing

def write_bundle(out, layers, tokens=None, key_tokens=None, layer_names=None, model="", notes="",
                 compressed=False):
    """layers: list of [B, H, L, S] arrays (one per layer, same shape). Written to a staging
    folder beside OUT, then renamed: OUT must not exist yet (nothing is overwritten)."""
    if not layers:
        raise BundleError("no attention layers were captured")
    shapes = {tuple(a.shape) for a in layers}
    if len(shapes) != 1:
        raise BundleError(f"layers have different shapes {sorted(shapes)}; write them as separate bundles")
    maps = np.stack([np.asarray(a, dtype=np.float32) for a in layers])  # [layers, B, H, L, S]
    if not np.isfinite(maps).all():
        index = tuple(int(i) for i in np.argwhere(~np.isfinite(maps))[0])
        raise BundleError(f"attention weight at [layer, b, h, i, j] = {list(index)} is not finite "
                          "(a query row with every key masked?)")
    L, S = maps.shape[3], maps.shape[4]
    if tokens is not None and len(tokens) != L:
        raise BundleError(f"{len(tokens)} tokens for L = {L} queries")
    if key_tokens is not None and len(key_tokens) != S:
        raise BundleError(f"{len(key_tokens)} key tokens for S = {S} keys")
    if os.path.exists(out):
        raise BundleError(f"{out}: already exists (choose a new folder; nothing is overwritten)")
    parent = os.path.dirname(os.path.abspath(out))
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".export-attention-", dir=parent)
    try:
        if compressed:
            np.savez_compressed(os.path.join(staging, "attentions.npz"), attentions=maps)
        else:
            np.save(os.path.join(staging, "attentions.npy"), maps)
        if tokens is not None:
            _write_lines(os.path.join(staging, "tokens.txt"), tokens)
        if key_tokens is not None and (S != L or tokens is None or list(key_tokens) != list(tokens)):
            _write_lines(os.path.join(staging, "key_tokens.txt"), key_tokens)
        meta = {"model": model, "layer_names": list(layer_names or [f"layer {i}" for i in range(len(layers))]),
                "notes": notes}
        with open(os.path.join(staging, "bundle.json"), "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=2)
            f.write("\n")
        os.rename(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out


def _write_lines(path, labels):
    with open(path, "w", encoding="utf-8") as f:
        for label in labels:
            f.write(str(label).replace("\n", " ").replace("\r", " ") + "\n")


# ----------------------------------------------------------------------------- PyTorch

@contextlib.contextmanager
def capture_attention(model):
    """Inside the block, every nn.MultiheadAttention call of `model` records its per-head
    weights [B, H, L, S] as (module name, numpy array) in the yielded list."""
    records = []
    patched = []
    for name, module in model.named_modules():
        if not isinstance(module, nn.MultiheadAttention):
            continue
        original = module.forward

        def forward(*args, _original=original, _name=name, _module=module, **kwargs):
            wanted = kwargs.get("need_weights", True)
            averaged = kwargs.get("average_attn_weights", True)
            kwargs["need_weights"] = True
            kwargs["average_attn_weights"] = False
            output, weights = _original(*args, **kwargs)
            per_head = weights.detach()
            if per_head.dim() == 3:  # unbatched input: [H, L, S]
                per_head = per_head.unsqueeze(0)
            records.append((_name, per_head.float().cpu().numpy()))
            if not wanted:
                return output, None
            return output, weights.mean(dim=-3) if averaged else weights

        module.forward = forward  # instance attribute: nn.Module.__call__ finds it
        patched.append((module, module.in_proj_weight if module._qkv_same_embed_dim else module.q_proj_weight))
    # The fused fast paths of nn.TransformerEncoder(Layer) and nn.MultiheadAttention (torch
    # >= 1.12) run in C++ without calling the module's forward. Each is skipped while grad
    # is enabled and a projection weight requires grad, so ask for exactly that.
    saved = [(weight, weight.requires_grad) for _, weight in patched]
    try:
        for weight, _ in saved:
            weight.requires_grad_(True)
        with torch.enable_grad():
            yield records
    finally:
        for weight, flag in saved:
            weight.requires_grad_(flag)
        for module, _ in patched:
            del module.forward


def export_torch(model, forward, out, tokens=None, key_tokens=None, model_name="", notes="", compressed=False):
    """Runs forward() (a no-argument callable running `model`) and writes every
    nn.MultiheadAttention call as a layer of the bundle OUT. Returns the folders written."""
    if not any(isinstance(m, nn.MultiheadAttention) for m in model.modules()):
        raise BundleError(f"{type(model).__name__} has no nn.MultiheadAttention module")
    with capture_attention(model) as records:
        forward()
    if not records:
        raise BundleError("the forward pass called no nn.MultiheadAttention module")
    names = [name for name, _ in records]
    layers = [weights for _, weights in records]
    model_name = model_name or type(model).__name__
    if len({w.shape for w in layers}) == 1:
        return [write_bundle(out, layers, tokens, key_tokens, names, model_name, notes, compressed)]
    # Self-attention (S == L) and cross-attention (S != L) layers cannot share one array.
    written = []
    for kind, keep in (("self_attention", lambda w: w.shape[2] == w.shape[3]),
                       ("cross_attention", lambda w: w.shape[2] != w.shape[3])):
        chosen = [(n, w) for n, w in records if keep(w)]
        if chosen:
            written.append(write_bundle(os.path.join(out, kind), [w for _, w in chosen],
                                        tokens, key_tokens if kind == "cross_attention" else tokens,
                                        [n for n, _ in chosen], model_name, notes, compressed))
    return written


def demo_encoder(seed=0):
    """A seeded 3-layer nn.TransformerEncoder (d_model 16, 4 heads, batch_first) in eval mode,
    its input [B=2, L=6, 16] and key padding [2, 6] (True = padding: lengths 6 and 4)."""
    torch.manual_seed(seed)
    layer = nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32, dropout=0.0, batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=3)
    model.eval()
    src = torch.randn(2, 6, 16)
    padding = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])
    tokens = ["the", "cat", "sat", "on", "the", "mat"]
    return model, src, padding, tokens


# ----------------------------------------------------------------------------- Hugging Face

def export_hf(model_id, texts, out, compressed=False):
    try:
        import transformers  # noqa: F401  (Debian 12 does not package it)
        from transformers import AutoConfig, AutoModel, AutoTokenizer
    except ImportError:
        print("export_attention.py: the Hugging Face path needs the 'transformers' package, which is not "
              "installed (pip install transformers); the PyTorch path (export_torch) works without it",
              file=sys.stderr)
        sys.exit(2)
    config = AutoConfig.from_pretrained(model_id)
    tokenizer = AutoTokenizer.from_pretrained(model_id)
    if tokenizer.pad_token is None and len(texts) > 1:
        tokenizer.pad_token = tokenizer.eos_token
    try:  # eager attention: the fused kernels (sdpa, flash) return no weights
        model = AutoModel.from_pretrained(model_id, attn_implementation="eager")
    except TypeError:
        model = AutoModel.from_pretrained(model_id)
    model.eval()
    encoded = tokenizer(texts, return_tensors="pt", padding=len(texts) > 1)
    with torch.no_grad():
        if getattr(config, "is_encoder_decoder", False):
            result = model(**encoded, decoder_input_ids=encoded["input_ids"], output_attentions=True)
            attentions = result.encoder_attentions
        else:
            result = model(**encoded, output_attentions=True)
            attentions = result.attentions
    if not attentions or attentions[0] is None:
        raise BundleError(f"{model_id}: the model returned no attention weights (output_attentions=True)")
    layers = [a.float().cpu().numpy() for a in attentions]  # each [B, H, L, S]
    n_layers = getattr(config, "num_hidden_layers", len(layers))
    n_heads = getattr(config, "num_attention_heads", layers[0].shape[1])
    if len(layers) != n_layers or layers[0].shape[1] != n_heads:
        raise BundleError(f"{model_id}: got {len(layers)} layers x {layers[0].shape[1]} heads, the config says "
                          f"{n_layers} x {n_heads}")
    kv_heads = getattr(config, "num_key_value_heads", n_heads) or n_heads
    notes = f"{len(texts)} text(s); tokens.txt lists item 0's tokens"
    if kv_heads != n_heads:
        notes += f"; grouped-query attention: {n_heads} query heads share {kv_heads} key/value heads"
    tokens = tokenizer.convert_ids_to_tokens(encoded["input_ids"][0].tolist())
    return [write_bundle(out, layers, tokens, None, [f"layer {i}" for i in range(len(layers))], model_id, notes,
                         compressed)]


# ----------------------------------------------------------------------------- command line

def main(argv=None):
    parser = argparse.ArgumentParser(description="Write attention bundles for attnscope.")
    sub = parser.add_subparsers(dest="command", required=True)
    hf = sub.add_parser("hf", help="a Hugging Face transformers model (output_attentions=True)")
    hf.add_argument("model", help="model name or local folder (AutoModel / AutoTokenizer)")
    hf.add_argument("--text", action="append", required=True, help="input text (repeat for a batch)")
    hf.add_argument("--out", required=True, help="bundle folder to create (must not exist)")
    hf.add_argument("--npz", action="store_true", help="write attentions.npz (compressed) instead of .npy")
    demo = sub.add_parser("demo-encoder", help="a seeded 3-layer nn.TransformerEncoder, B=2 with key padding")
    demo.add_argument("--out", required=True, help="bundle folder to create (must not exist)")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--npz", action="store_true", help="write attentions.npz (compressed) instead of .npy")
    args = parser.parse_args(argv)
    if torch is None:
        print("export_attention.py: PyTorch is not installed (Debian: apt install python3-torch)", file=sys.stderr)
        return 2
    try:
        if args.command == "hf":
            written = export_hf(args.model, args.text, args.out, args.npz)
        else:
            model, src, padding, tokens = demo_encoder(args.seed)
            written = export_torch(model, lambda: model(src, src_key_padding_mask=padding), args.out, tokens=tokens,
                                   model_name="nn.TransformerEncoder (3 layers, d_model 16, 4 heads, seed "
                                              f"{args.seed})", compressed=args.npz)
    except BundleError as e:
        print(f"export_attention.py: {e}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
