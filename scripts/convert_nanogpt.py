#!/usr/bin/python3
"""Converts a karpathy/nanoGPT checkpoint (the `GPT` class, saved by its train.py as ckpt.pt)
into an attnscope-model/1 folder that `attnscope model run` and the app can open.

  /usr/bin/python3 scripts/convert_nanogpt.py out-shakespeare-char/ckpt.pt \\
      data/shakespeare_char/meta.pkl --out my-shakespeare

The checkpoint is a dict with "model" (the state dict, keys possibly prefixed "_orig_mod."
by torch.compile) and "model_args" (n_layer, n_head, n_embd, block_size, bias, vocab_size).
Tensors map as follows (nn.Linear convention on both sides):
  transformer.wte.weight          -> tok_emb [V, D]
  transformer.wpe.weight          -> pos_emb [block_size, D]
  transformer.h.N.ln_1.*          -> blocks.N.ln1.*
  transformer.h.N.attn.c_attn.*   -> blocks.N.attn.w_q/w_k/w_v (+ b_q/b_k/b_v): rows split in thirds
  transformer.h.N.attn.c_proj.*   -> blocks.N.attn.w_o (+ b_o)
  transformer.h.N.ln_2.*          -> blocks.N.ln2.*
  transformer.h.N.mlp.c_fc.*      -> blocks.N.mlp.w_in (+ b_in)
  transformer.h.N.mlp.c_proj.*    -> blocks.N.mlp.w_out (+ b_out)
  transformer.ln_f.*              -> ln_f.*
  lm_head.weight                  -> lm_head (omitted, tied_embeddings = true, when it equals wte)
With bias=False, LayerNorm and MLP biases are written as zeros and attention biases omitted.
META.pkl (character-level data sets such as shakespeare_char) holds "stoi"/"itos": the
vocabulary (ids that nanoGPT padded on get private-use characters U+E000 + id). Without it
the model must have vocab_size <= 256 and is read as bytes.
Characters outside the vocabulary map to --unk (default: the space, when the vocabulary has one).
"""
import argparse
import json
import os
import pickle
import shutil
import sys

import numpy as np
import torch


def fail(message):
    print(f"convert_nanogpt: {message}", file=sys.stderr)
    sys.exit(1)


def load_checkpoint(path):
    try:
        ckpt = torch.load(path, map_location="cpu")
    except Exception as e:  # a truncated or foreign file: say which and why, in one line
        fail(f"{path}: cannot read the checkpoint ({type(e).__name__}: {str(e).splitlines()[0]})")
    if not isinstance(ckpt, dict) or "model" not in ckpt or "model_args" not in ckpt:
        fail(f"{path}: not a nanoGPT checkpoint (expected a dict with 'model' and 'model_args')")
    state = {k[len("_orig_mod."):] if k.startswith("_orig_mod.") else k: v for k, v in ckpt["model"].items()}
    return state, ckpt["model_args"]


def load_vocab(meta_path, vocab_size, ckpt_path):
    if meta_path is None:
        if vocab_size > 256:
            fail(f"{ckpt_path}: vocab_size {vocab_size} needs META.pkl (stoi/itos of a character-level "
                 "model); GPT-2 BPE checkpoints are not supported")
        return None
    with open(meta_path, "rb") as f:
        meta = pickle.load(f)
    itos = meta.get("itos") if isinstance(meta, dict) else None
    if not isinstance(itos, dict):
        fail(f"{meta_path}: no 'itos' dict (expected nanoGPT's meta.pkl of a character-level data set)")
    if len(itos) > vocab_size:
        fail(f"{meta_path}: {len(itos)} characters but the model's vocab_size is {vocab_size}")
    vocab = []
    for i in range(vocab_size):  # nanoGPT may pad vocab_size: padded ids get private-use characters
        ch = itos.get(i)
        vocab.append(ch if isinstance(ch, str) and len(ch) == 1 else chr(0xE000 + i))
    return vocab


def main():
    ap = argparse.ArgumentParser(description="Convert a nanoGPT checkpoint to an attnscope model folder.")
    ap.add_argument("ckpt", metavar="CKPT.pt")
    ap.add_argument("meta", metavar="META.pkl", nargs="?")
    ap.add_argument("--out", required=True, metavar="MODEL_DIR")
    ap.add_argument("--name", help="model name (default: the folder name)")
    ap.add_argument("--unk", default=" ", help="character that unknown characters map to (default: space)")
    ap.add_argument("--float16", action="store_true", help="store the tensors as float16 (half the size)")
    args = ap.parse_args()
    if os.path.exists(args.out):
        fail(f"{args.out}: already exists (choose a new folder)")

    state, margs = load_checkpoint(args.ckpt)
    try:
        N, H, D = int(margs["n_layer"]), int(margs["n_head"]), int(margs["n_embd"])
        T, V = int(margs["block_size"]), int(margs["vocab_size"])
    except (KeyError, TypeError, ValueError) as e:
        fail(f"{args.ckpt}: model_args lacks {e} (need n_layer, n_head, n_embd, block_size, vocab_size)")
    vocab = load_vocab(args.meta, V, args.ckpt)

    def get(key, shape):
        if key not in state:
            fail(f"{args.ckpt}: state dict has no '{key}'")
        t = state[key].detach().float().numpy()
        if t.shape != shape:
            fail(f"{args.ckpt}: '{key}' has shape {list(t.shape)}, expected {list(shape)}")
        return t

    def maybe(key, shape):
        return get(key, shape) if key in state else None

    tensors = {"tok_emb": get("transformer.wte.weight", (V, D)),
               "pos_emb": get("transformer.wpe.weight", (T, D))}
    zeros = np.zeros(D, np.float32)
    for i in range(N):
        src, dst = f"transformer.h.{i}.", f"blocks.{i}."
        M = state.get(src + "mlp.c_fc.weight", torch.empty(0, 0)).shape[0]
        tensors[dst + "ln1.weight"] = get(src + "ln_1.weight", (D,))
        tensors[dst + "ln1.bias"] = maybe(src + "ln_1.bias", (D,)) if src + "ln_1.bias" in state else zeros
        w = get(src + "attn.c_attn.weight", (3 * D, D))
        b = maybe(src + "attn.c_attn.bias", (3 * D,))
        for j, n in enumerate("qkv"):  # q, k, v = c_attn(x).split(n_embd, dim=2)
            tensors[dst + f"attn.w_{n}"] = w[j * D:(j + 1) * D]
            if b is not None:
                tensors[dst + f"attn.b_{n}"] = b[j * D:(j + 1) * D]
        tensors[dst + "attn.w_o"] = get(src + "attn.c_proj.weight", (D, D))
        if src + "attn.c_proj.bias" in state:
            tensors[dst + "attn.b_o"] = get(src + "attn.c_proj.bias", (D,))
        tensors[dst + "ln2.weight"] = get(src + "ln_2.weight", (D,))
        tensors[dst + "ln2.bias"] = maybe(src + "ln_2.bias", (D,)) if src + "ln_2.bias" in state else zeros
        tensors[dst + "mlp.w_in"] = get(src + "mlp.c_fc.weight", (M, D))
        tensors[dst + "mlp.b_in"] = (get(src + "mlp.c_fc.bias", (M,)) if src + "mlp.c_fc.bias" in state
                                     else np.zeros(M, np.float32))
        tensors[dst + "mlp.w_out"] = get(src + "mlp.c_proj.weight", (D, M))
        tensors[dst + "mlp.b_out"] = (get(src + "mlp.c_proj.bias", (D,)) if src + "mlp.c_proj.bias" in state
                                      else zeros)
    tensors["ln_f.weight"] = get("transformer.ln_f.weight", (D,))
    tensors["ln_f.bias"] = maybe("transformer.ln_f.bias", (D,)) if "transformer.ln_f.bias" in state else zeros
    lm_head = get("lm_head.weight", (V, D))
    tied = bool(np.array_equal(lm_head, tensors["tok_emb"]))
    if not tied:
        tensors["lm_head"] = lm_head

    if vocab is not None:
        unk_id = vocab.index(args.unk) if args.unk in vocab else 0
    else:
        unk_id = 0
    name = args.name or os.path.basename(os.path.normpath(args.out))
    cfg = {"format": "attnscope-model/1", "name": name,
           "description": f"nanoGPT checkpoint {os.path.basename(args.ckpt)} ({N} layers, {H} heads, "
                          f"d_model {D}), converted by scripts/convert_nanogpt.py",
           "n_layers": N, "n_heads": H, "d_model": D, "d_mlp": int(tensors["blocks.0.mlp.w_in"].shape[0]) if N else 0,
           "max_len": T, "vocab_size": V, "tokenizer": "chars" if vocab is not None else "bytes",
           "unk_id": unk_id, "positional": "learned", "activation": "gelu", "ln_eps": 1e-5,
           "tied_embeddings": tied, "mlp": True}

    # Written beside the target and renamed into place: never a half-converted folder.
    staging = args.out.rstrip("/") + ".converting"
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    dtype = np.float16 if args.float16 else np.float32
    with open(os.path.join(staging, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    if vocab is not None:
        with open(os.path.join(staging, "vocab.json"), "w") as f:
            json.dump(vocab, f)
    for key, t in tensors.items():
        np.save(os.path.join(staging, key + ".npy"), np.ascontiguousarray(t.astype(dtype)))
    os.rename(staging, args.out)
    print(f"wrote {args.out}: {N} layers x {H} heads, d_model {D}, context {T}, vocab {V} "
          f"({cfg['tokenizer']}), {'tied' if tied else 'untied'} embeddings, {len(tensors)} tensors")


if __name__ == "__main__":
    main()
