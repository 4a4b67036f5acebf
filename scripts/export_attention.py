#!/usr/bin/env python3
"""Write attention bundles that attnscope opens (`attnscope BUNDLE`, `attnscope export BUNDLE`).

A bundle is a folder with (docs/cli.md, "Attention bundles")
  attentions.npy  float32 [layers, B, H, L, S]: every attention layer's per-head probabilities
  tokens.txt      L query labels, one per line (one row for every batch item; PyTorch path)
  key_tokens.txt  S key labels, when S differs from L
  tokens.json     Hugging Face path: every item's raw pieces, ids and special flags, labelled
                  by attnscope with its tokenizer's rules ("piece_style")
  attention_mask.npy  int64 [B, S]: 1 = token, 0 = padding (query_mask.npy [B, L] for
                  cross-attention, whose queries are another sequence)
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
         export_attention.py hf MODEL_OR_FOLDER --text "The cat sat" [--text "..."] --out bundle
     runs the model with output_attentions=True (eager attention); tokens and padding come
     from the model's tokenizer and the layer and head counts from its config (grouped-query
     models report one map per query head). Encoder-decoder models (T5, BART) give the
     sub-bundles OUT/encoder_self_attention, OUT/decoder_self_attention and
     OUT/cross_attention; the decoder reads decoder_start_token_id + the tokens of
     --decoder-text (default: the start token alone). write_hf_export() does the writing
     from plain arrays (tested without transformers); scripts/check_export_transformers.py
     checks the whole path where transformers is installed. Without transformers installed
     it says so and exits 2.

And a self-contained example (used by the tests):
         export_attention.py demo-encoder --out bundle
  writes a seeded 3-layer nn.TransformerEncoder (d_model 16, 4 heads) on B=2 sequences of
  lengths 6 and 4 (key padding).

Run with /usr/bin/python3 on Debian (python3-torch, python3-numpy). Exit status: 0 ok,
1 bad input (one line naming the problem), 2 usage or a missing package.
"""
import argparse
import contextlib
import inspect
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

@contextlib.contextmanager
def _staged(out):
    """Yields a staging folder beside OUT that becomes OUT when the block succeeds (and is
    removed when it fails): OUT must not exist yet (nothing is overwritten)."""
    if os.path.exists(out):
        raise BundleError(f"{out}: already exists (choose a new folder; nothing is overwritten)")
    parent = os.path.dirname(os.path.abspath(out))
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".export-attention-", dir=parent)
    try:
        yield staging
        os.rename(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _stack_maps(layers):
    """[layers, B, H, L, S] float32 from one [B, H, L, S] array per layer, all finite."""
    if not layers:
        raise BundleError("no attention layers were captured")
    shapes = {tuple(np.shape(a)) for a in layers}
    if len(shapes) != 1:
        raise BundleError(f"layers have different shapes {sorted(shapes)}; write them as separate bundles")
    maps = np.stack([np.asarray(a, dtype=np.float32) for a in layers])
    if maps.ndim != 5:
        raise BundleError(f"each layer must be [B, H, L, S], got {list(maps.shape[1:])}")
    if not np.isfinite(maps).all():
        index = tuple(int(i) for i in np.argwhere(~np.isfinite(maps))[0])
        raise BundleError(f"attention weight at [layer, b, h, i, j] = {list(index)} is not finite "
                          "(a query row with every key masked?)")
    return maps


def _fill_bundle(folder, maps, tokens=None, key_tokens=None, layer_names=None, model="", notes="",
                 compressed=False, token_doc=None, attention_mask=None, query_mask=None):
    """Writes one bundle's files into FOLDER (created): maps [layers, B, H, L, S]; tokens /
    key_tokens: one row of labels (tokens.txt / key_tokens.txt); token_doc: tokens.json's
    document instead; attention_mask [B, S] / query_mask [B, L]: 1 = token, 0 = padding."""
    B, L, S = maps.shape[1], maps.shape[3], maps.shape[4]
    if tokens is not None and len(tokens) != L:
        raise BundleError(f"{len(tokens)} tokens for L = {L} queries")
    if key_tokens is not None and len(key_tokens) != S:
        raise BundleError(f"{len(key_tokens)} key tokens for S = {S} keys")
    os.makedirs(folder, exist_ok=True)
    if compressed:
        np.savez_compressed(os.path.join(folder, "attentions.npz"), attentions=maps)
    else:
        np.save(os.path.join(folder, "attentions.npy"), maps)
    if tokens is not None:
        _write_lines(os.path.join(folder, "tokens.txt"), tokens)
    if key_tokens is not None and (S != L or tokens is None or list(key_tokens) != list(tokens)):
        _write_lines(os.path.join(folder, "key_tokens.txt"), key_tokens)
    if token_doc is not None:
        with open(os.path.join(folder, "tokens.json"), "w", encoding="utf-8") as f:
            json.dump(token_doc, f, ensure_ascii=False)
            f.write("\n")
    for name, mask, n in (("attention_mask.npy", attention_mask, S), ("query_mask.npy", query_mask, L)):
        if mask is None:
            continue
        mask = np.asarray(mask)
        if mask.shape != (B, n) or not np.isin(mask, (0, 1)).all():
            raise BundleError(f"{name}: expected [B, {n}] = [{B}, {n}] of 0 and 1, got shape {list(mask.shape)}")
        np.save(os.path.join(folder, name), mask.astype(np.int64))  # as transformers gives it
    meta = {"model": model, "layer_names": list(layer_names or [f"layer {i}" for i in range(maps.shape[0])]),
            "notes": notes}
    with open(os.path.join(folder, "bundle.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")


def write_bundle(out, layers, tokens=None, key_tokens=None, layer_names=None, model="", notes="",
                 compressed=False):
    """layers: list of [B, H, L, S] arrays (one per layer, same shape). Written to a staging
    folder beside OUT, then renamed: OUT must not exist yet (nothing is overwritten)."""
    maps = _stack_maps(layers)
    with _staged(out) as staging:
        _fill_bundle(staging, maps, tokens, key_tokens, layer_names, model, notes, compressed)
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

class TokenRows:
    """One side of a batch (the encoder's or the decoder's input) as the tokenizer gave it,
    in plain lists: ids [B][n] ints, pieces [B][n] raw vocabulary strings ("Ġthe", "▁the"),
    special [B][n] bools (special tokens keep their piece as label), mask [B][n] 1 = token,
    0 = padding, piece_style "byte_level" (GPT-2's byte alphabet) or "plain"."""

    def __init__(self, ids, pieces, special, mask, piece_style):
        self.ids = [[int(i) for i in row] for row in ids]
        self.pieces = [list(row) for row in pieces]
        self.special = [[bool(x) for x in row] for row in special]
        self.mask = np.asarray(mask, dtype=np.int64)
        self.piece_style = piece_style
        lengths = {len(row) for row in self.ids + self.pieces + self.special} | {self.mask.shape[-1]}
        if len(lengths) != 1 or len({len(self.ids), len(self.pieces), len(self.special), len(self.mask)}) != 1:
            raise BundleError("token ids, pieces, special flags and mask differ in shape")

    def document_rows(self):
        """tokens.json rows: {"token", "id", "special"} per position (labels are made by attnscope)."""
        return [[{"token": piece, "id": i, "special": special} for piece, i, special in zip(*row)]
                for row in zip(self.pieces, self.ids, self.special)]


def tokens_document(queries, keys=None):
    """tokens.json (docs/cli.md, "Attention bundles"): query rows, and key rows when the keys are
    another sequence (cross-attention)."""
    doc = {"piece_style": queries.piece_style, "query": queries.document_rows()}
    if keys is not None:
        doc["key"] = keys.document_rows()
    return doc


# Sub-bundles of an encoder-decoder model: (folder, model output, query side, key side).
ENCODER_DECODER_PARTS = (
    ("encoder_self_attention", "encoder_attentions", "encoder", "encoder"),
    ("decoder_self_attention", "decoder_attentions", "decoder", "decoder"),
    ("cross_attention", "cross_attentions", "decoder", "encoder"),
)


def write_hf_export(out, outputs, encoder, decoder=None, model="", notes="", compressed=False):
    """The Hugging Face path's writing, without transformers. outputs: the model output's
    attention tuples as lists of [B, H, L, S] arrays, by name: "attentions" (decoder-only and
    encoder models: one bundle OUT), or "encoder_attentions", "decoder_attentions" and
    "cross_attentions" (encoder-decoder models, with decoder given: three sub-bundles
    OUT/encoder_self_attention, OUT/decoder_self_attention, OUT/cross_attention). encoder /
    decoder: TokenRows. Each bundle gets tokens.json for every batch item and its padding
    (attention_mask.npy [B, S] of its keys; query_mask.npy [B, L] of its queries when they are
    another sequence). Staged: OUT appears whole or not at all. Returns the folders written."""
    sides = {"encoder": encoder, "decoder": decoder}
    if decoder is None:
        parts = [(None, "attentions", "encoder", "encoder")]
    else:
        parts = list(ENCODER_DECODER_PARTS)
    bundles = []
    for folder, key, query_side, key_side in parts:
        layers = outputs.get(key)
        if not layers or any(a is None for a in layers):
            raise BundleError(f"{model}: the model returned no {key} (output_attentions=True)")
        maps = _stack_maps(layers)
        queries, keys = sides[query_side], sides[key_side]
        B, L, S = maps.shape[1], maps.shape[3], maps.shape[4]
        for side, rows, n, axis in ((query_side, queries, L, "L"), (key_side, keys, S, "S")):
            if len(rows.ids) != B or len(rows.ids[0]) != n:
                raise BundleError(f"{key}: maps [B={B}, {axis}={n}] but the {side} tokens are "
                                  f"[{len(rows.ids)}, {len(rows.ids[0])}]")
        kind = folder.replace("_", " ") if folder else "layer"
        names = [f"{kind} {i}" if folder else f"layer {i}" for i in range(len(layers))]
        cross = query_side != key_side
        bundles.append((folder, maps, dict(
            layer_names=names, model=model, notes=notes, compressed=compressed,
            token_doc=tokens_document(queries, keys if cross else None),
            attention_mask=keys.mask, query_mask=queries.mask if cross else None)))
    with _staged(out) as staging:
        for folder, maps, options in bundles:
            _fill_bundle(staging if folder is None else os.path.join(staging, folder), maps, **options)
    return [out if folder is None else os.path.join(out, folder) for folder, _, _ in bundles]


def decoder_batch(start_id, pad_id, targets, batch):
    """Decoder input ids and mask [B][n]: decoder_start_token_id followed by each item's target
    ids (one target list for every item, or one per item; none: the start token alone),
    right-padded with pad_id."""
    if start_id is None:
        raise BundleError("the model's config has no decoder_start_token_id")
    targets = targets or [[]]
    if len(targets) not in (1, batch):
        raise BundleError(f"{len(targets)} decoder texts for {batch} texts (give one, or one per text)")
    rows = [[int(start_id)] + [int(i) for i in t] for t in (targets * batch if len(targets) == 1 else targets)]
    n = max(len(r) for r in rows)
    if pad_id is None and any(len(r) < n for r in rows):
        raise BundleError("decoder texts of different lengths need a pad token (the tokenizer has none)")
    ids = [r + [int(pad_id or 0)] * (n - len(r)) for r in rows]
    mask = [[1] * len(r) + [0] * (n - len(r)) for r in rows]
    return ids, mask


def _mentions_byte_level(node):
    """As core/tokenizer/tokenizer.cpp's mentionsByteLevel: a ByteLevel step, or one in a Sequence."""
    if not isinstance(node, dict):
        return False
    if node.get("type") == "ByteLevel":
        return True
    return any(_mentions_byte_level(n) for key in ("pretokenizers", "decoders") for n in node.get(key) or [])


def piece_style(tokenizer):
    """"byte_level" when the tokenizer's pieces spell bytes in GPT-2's alphabet, else "plain"."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        doc = json.loads(backend.to_str())
        return "byte_level" if any(_mentions_byte_level(doc.get(k)) for k in ("pre_tokenizer", "decoder")) else "plain"
    return "byte_level" if hasattr(tokenizer, "byte_encoder") else "plain"


def token_rows(tokenizer, ids, mask):
    """TokenRows of a batch of ids [B][n] and its mask from a transformers tokenizer."""
    special = set(tokenizer.all_special_ids)
    pieces = [tokenizer.convert_ids_to_tokens(row) for row in ids]
    return TokenRows(ids, pieces, [[i in special for i in row] for row in ids], mask, piece_style(tokenizer))


def _pretrained_source(model_id):
    """A local folder (read with local_files_only, never the network) or a hub name."""
    if os.path.isdir(model_id):
        return os.path.abspath(model_id), {"local_files_only": True}
    if model_id.startswith(("/", "./", "../", "~")) or os.path.exists(model_id):
        raise BundleError(f"{model_id}: not a model folder (no such directory)")
    return model_id, {}


def export_hf(model_id, texts, out, compressed=False, decoder_texts=None):
    try:
        import transformers  # noqa: F401  (Debian 12 does not package it)
        from transformers import AutoConfig, AutoModel, AutoTokenizer
    except ImportError:
        print("export_attention.py: the Hugging Face path needs the 'transformers' package, which is not "
              "installed (pip install transformers); the PyTorch path (export_torch) works without it",
              file=sys.stderr)
        sys.exit(2)
    source, options = _pretrained_source(model_id)
    try:
        config = AutoConfig.from_pretrained(source, **options)
        tokenizer = AutoTokenizer.from_pretrained(source, **options)
    except (OSError, ValueError) as e:  # a folder without config.json or tokenizer files, an unknown name
        raise BundleError(f"{model_id}: {str(e).strip().splitlines()[0]}") from None
    encoder_decoder = bool(getattr(config, "is_encoder_decoder", False))
    if decoder_texts and not encoder_decoder:
        raise BundleError(f"{model_id}: --decoder-text needs an encoder-decoder model (T5, BART); "
                          f"this is a {config.model_type}")
    if tokenizer.pad_token is None and (len(texts) > 1 or len(decoder_texts or []) > 1):
        if tokenizer.eos_token is None:
            raise BundleError(f"{model_id}: a batch needs a pad token, and the tokenizer has neither pad nor eos")
        tokenizer.pad_token = tokenizer.eos_token
    try:  # eager attention: the fused kernels (sdpa, flash) return no weights
        model = AutoModel.from_pretrained(source, attn_implementation="eager", **options)
    except TypeError:
        model = AutoModel.from_pretrained(source, **options)
    model.eval()
    encoded = tokenizer(texts, return_tensors="pt", padding=True)
    encoder = token_rows(tokenizer, encoded["input_ids"].tolist(), encoded["attention_mask"].tolist())
    accepted = inspect.signature(model.forward).parameters  # T5 and BART take no token_type_ids
    encoded = {k: v for k, v in encoded.items() if k in accepted}
    notes = f"{len(texts)} text(s); tokens.json lists every item's tokens"
    decoder = None
    with torch.no_grad():
        if encoder_decoder:
            targets = tokenizer(text_target=decoder_texts)["input_ids"] if decoder_texts else None
            start = getattr(config, "decoder_start_token_id", None)
            if start is None:  # newer transformers keep it in the generation config
                start = getattr(getattr(model, "generation_config", None), "decoder_start_token_id", None)
            ids, mask = decoder_batch(start, tokenizer.pad_token_id, targets, len(texts))
            decoder = token_rows(tokenizer, ids, mask)
            result = model(**encoded, decoder_input_ids=torch.tensor(ids), decoder_attention_mask=torch.tensor(mask),
                           output_attentions=True)
            keys = [folder_key for _, folder_key, _, _ in ENCODER_DECODER_PARTS]
        else:
            result = model(**encoded, output_attentions=True)
            keys = ["attentions"]
    outputs = {key: [a.float().cpu().numpy() if a is not None else None for a in (getattr(result, key, None) or [])]
               for key in keys}
    if not encoder_decoder:
        layers = outputs["attentions"]
        n_layers = getattr(config, "num_hidden_layers", len(layers))
        n_heads = getattr(config, "num_attention_heads", layers[0].shape[1] if layers and layers[0] is not None else 0)
        if layers and layers[0] is not None and (len(layers) != n_layers or layers[0].shape[1] != n_heads):
            raise BundleError(f"{model_id}: got {len(layers)} layers x {layers[0].shape[1]} heads, the config says "
                              f"{n_layers} x {n_heads}")
        kv_heads = getattr(config, "num_key_value_heads", n_heads) or n_heads
        if kv_heads != n_heads:
            notes += f"; grouped-query attention: {n_heads} query heads share {kv_heads} key/value heads"
    return write_hf_export(out, outputs, encoder, decoder, model_id, notes, compressed)


# ----------------------------------------------------------------------------- command line

def main(argv=None):
    parser = argparse.ArgumentParser(description="Write attention bundles for attnscope.")
    sub = parser.add_subparsers(dest="command", required=True)
    hf = sub.add_parser("hf", help="a Hugging Face transformers model (output_attentions=True)")
    hf.add_argument("model", help="model name or local folder (AutoModel / AutoTokenizer)")
    hf.add_argument("--text", action="append", required=True, help="input text (repeat for a batch)")
    hf.add_argument("--decoder-text", action="append",
                    help="encoder-decoder models (T5, BART): the decoder's target text, after the model's "
                         "decoder_start_token (one for every text, or repeat once per --text; default: the "
                         "start token alone)")
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
            written = export_hf(args.model, args.text, args.out, args.npz, args.decoder_text)
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
