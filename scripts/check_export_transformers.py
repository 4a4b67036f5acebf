#!/usr/bin/env python3
"""Checks scripts/export_attention.py's Hugging Face path against transformers itself, on a
machine that has it (Debian 12 does not package transformers, so CI cannot run this).

    python3 scripts/check_export_transformers.py OUT_DIR [--attnscope build/attnscope]

Needs python3 with torch, transformers, tokenizers and numpy; nothing is downloaded. It
writes into OUT_DIR (which must not exist):
  models/{gpt2,t5,bart}   tiny randomly initialised models (transformers' config classes,
                          save_pretrained) with tokenizers trained here on a few sentences
                          (byte-level BPE for GPT-2 and BART, Unigram with Metaspace for T5)
  bundles/{gpt2,t5,bart}  what export_attention.py wrote for them (a batch of two texts of
                          different lengths, padded)
and prints one PASS/FAIL line per check, then "ALL PASS" or "N FAILED" (exit status 0 / 1).
Checks: the maps equal the model's own output_attentions (eager attention, numpy allclose,
atol 1e-6) for the decoder-only model and for the encoder, decoder and cross-attention
sub-bundles of T5 and BART; tokens.json holds every item's own ids and raw pieces (item 1 is
not labelled with item 0's tokens) and the piece style; attention_mask.npy / query_mask.npy
equal the tokenizer's masks; padded keys get zero weight. With --attnscope, the binary reads
every bundle back (`attnscope export --what mask --format npy`: padded keys and padded query
rows are masked) and the readable labels it draws are printed (no raw "Ġ" or "Ċ" left).
"""
import argparse
import csv
import inspect
import json
import os
import subprocess
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORTER = os.path.join(HERE, "export_attention.py")
TEXTS = ["The cat sat on the mat.\nA dog ran after it, quickly.", "Καλημέρα cat"]
DECODER_TEXTS = ["Die Katze saß.", "Hallo Welt, wie geht es dir heute?"]
CORPUS = [
    "The cat sat on the mat. The dog sat on the log.",
    "A dog ran after the cat, quickly and quietly.\nThen it stopped.",
    "Die Katze saß auf der Matte. Hallo Welt, wie geht es dir heute?",
    "Καλημέρα κόσμε. Привет мир. שלום עולם. مرحبا بالعالم. नमस्ते दुनिया.",
    "def f(x):\n    return x + 1\n\n",
] * 4

results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(f"{'PASS' if ok else 'FAIL'} {name}" + (f": {detail}" if detail and not ok else ""), flush=True)


# ----------------------------------------------------------------------------- tiny models

def byte_level_tokenizer(specials, roberta):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS, trainer)
    if roberta:  # BART: <s> text </s>
        tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")),
                                                          ("<s>", tok.token_to_id("<s>")))
    return tok


def unigram_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.UnigramTrainer(vocab_size=300, special_tokens=["<pad>", "</s>", "<unk>"], unk_token="<unk>")
    tok.train_from_iterator(CORPUS, trainer)
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", pair="$A </s> $B </s>",
                                                       special_tokens=[("</s>", tok.token_to_id("</s>"))])
    return tok


def save_models(root):
    """{name: folder} of three tiny random models with their tokenizers."""
    import transformers as tf
    torch.manual_seed(0)
    folders = {}
    fast_class = getattr(tf, "PreTrainedTokenizerFast", None) or tf.TokenizersBackend  # renamed in 5.x

    def wrap(tok, **specials):  # the models read input_ids and attention_mask only
        return fast_class(tokenizer_object=tok, model_input_names=["input_ids", "attention_mask"], **specials)

    tok = byte_level_tokenizer(["<|endoftext|>", "<pad>"], roberta=False)
    fast = wrap(tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>", unk_token="<|endoftext|>",
                pad_token="<pad>")
    config = tf.GPT2Config(vocab_size=len(fast), n_positions=64, n_embd=32, n_layer=2, n_head=4,
                           bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id,
                           pad_token_id=fast.pad_token_id)
    folders["gpt2"] = save(root, "gpt2", tf.GPT2Model(config), fast)

    tok = unigram_tokenizer()
    fast = wrap(tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")
    config = tf.T5Config(vocab_size=len(fast), d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2,
                         num_heads=4, pad_token_id=fast.pad_token_id, eos_token_id=fast.eos_token_id,
                         decoder_start_token_id=fast.pad_token_id)
    folders["t5"] = save(root, "t5", tf.T5Model(config), fast)

    tok = byte_level_tokenizer(["<s>", "<pad>", "</s>", "<unk>", "<mask>"], roberta=True)
    fast = wrap(tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>", mask_token="<mask>")
    config = tf.BartConfig(vocab_size=len(fast), d_model=32, encoder_layers=2, decoder_layers=2,
                           encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                           decoder_ffn_dim=64, max_position_embeddings=64, pad_token_id=fast.pad_token_id,
                           bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id,
                           decoder_start_token_id=fast.eos_token_id)
    folders["bart"] = save(root, "bart", tf.BartModel(config), fast)
    return folders


def save(root, name, model, tokenizer):
    folder = os.path.join(root, name)
    model.eval()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


# ----------------------------------------------------------------------------- references

def reference(folder, decoder_texts):
    """What the model itself gives on the same inputs: {output name: [layers, B, H, L, S]},
    the encoder's ids/mask and the decoder's (start token + target ids, right-padded)."""
    import transformers as tf
    tokenizer = tf.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = tf.AutoModel.from_pretrained(folder, local_files_only=True, attn_implementation="eager").eval()
    encoded = tokenizer(TEXTS, return_tensors="pt", padding=True)
    accepted = inspect.signature(model.forward).parameters
    encoded = {k: v for k, v in encoded.items() if k in accepted}  # model(**encoded), as its docs call it
    sides = {"encoder": (encoded["input_ids"].numpy(), encoded["attention_mask"].numpy())}
    with torch.no_grad():
        if model.config.is_encoder_decoder:
            start = model.config.decoder_start_token_id
            if start is None:
                start = model.generation_config.decoder_start_token_id
            rows = [[start] + ids for ids in tokenizer(text_target=decoder_texts)["input_ids"]]
            n = max(map(len, rows))
            ids = np.array([r + [tokenizer.pad_token_id] * (n - len(r)) for r in rows])
            mask = np.array([[1] * len(r) + [0] * (n - len(r)) for r in rows])
            sides["decoder"] = (ids, mask)
            out = model(**encoded, decoder_input_ids=torch.tensor(ids), decoder_attention_mask=torch.tensor(mask),
                        output_attentions=True)
            names = ["encoder_attentions", "decoder_attentions", "cross_attentions"]
        else:
            out = model(**encoded, output_attentions=True)
            names = ["attentions"]
    maps = {name: np.stack([a.float().numpy() for a in getattr(out, name)]) for name in names}
    return tokenizer, maps, sides


def check_bundle(label, bundle, maps, tokenizer, queries, keys, style, cross):
    q_ids, q_mask = queries
    k_ids, k_mask = keys
    got = np.load(os.path.join(bundle, "attentions.npy"))
    check(f"{label}: attentions.npy {list(got.shape)} equals output_attentions",
          got.shape == maps.shape and np.allclose(got, maps, rtol=0, atol=1e-6),
          f"shapes {got.shape} vs {maps.shape}" if got.shape != maps.shape
          else f"max |diff| {np.abs(got - maps).max():.3g}")
    with open(os.path.join(bundle, "tokens.json"), encoding="utf-8") as f:
        doc = json.load(f)
    check(f"{label}: tokens.json piece_style {style}", doc.get("piece_style") == style, str(doc.get("piece_style")))
    for side, rows, ids in (("query", doc.get("query"), q_ids), ("key", doc.get("key") if cross else doc.get("query"),
                                                                    k_ids)):
        ok = rows is not None and len(rows) == len(ids) and all(
            [e["id"] for e in row] == list(map(int, item)) and
            [e["token"] for e in row] == tokenizer.convert_ids_to_tokens(list(map(int, item)))
            for row, item in zip(rows, ids))
        check(f"{label}: tokens.json {side} rows are every item's own ids and pieces", ok)
    check(f"{label}: item 1's tokens differ from item 0's",
          [e["id"] for e in doc["query"][0]] != [e["id"] for e in doc["query"][1]])
    check(f"{label}: 'key' rows only for cross-attention", ("key" in doc) == cross)
    mask = np.load(os.path.join(bundle, "attention_mask.npy"))
    check(f"{label}: attention_mask.npy equals the keys' mask", np.array_equal(mask, k_mask), f"{mask} vs {k_mask}")
    query_mask_path = os.path.join(bundle, "query_mask.npy")
    if cross:
        check(f"{label}: query_mask.npy equals the queries' mask",
              os.path.exists(query_mask_path) and np.array_equal(np.load(query_mask_path), q_mask))
    else:
        check(f"{label}: no query_mask.npy for self-attention", not os.path.exists(query_mask_path))
    padded = int((k_mask == 0).sum())
    check(f"{label}: padded keys ({padded}) get zero weight",
          all(np.all(got[:, b][..., k_mask[b] == 0] == 0) for b in range(len(k_mask))))


def check_with_attnscope(binary, label, bundle, queries, keys, scratch):
    """The binary reads the bundle: its mask is the padding, its labels are readable."""
    q_mask, k_mask = queries[1], keys[1]
    for b in range(len(q_mask)):
        out = os.path.join(scratch, f"{label.replace(' ', '_')}_b{b}")
        proc = subprocess.run([binary, "export", bundle, "--what", "mask,probs", "--layers", "0", "--heads", "0",
                               "--batch", str(b), "--format", "npy,csv", "--out", out], capture_output=True,
                              text=True)
        if proc.returncode != 0:
            check(f"{label}: attnscope export --batch {b}", False, proc.stderr.strip())
            continue
        files = sorted(os.listdir(out))
        mask_file = [f for f in files if f.startswith("mask") and f.endswith(".npy")]
        allowed = np.load(os.path.join(out, mask_file[0])) == 1 if mask_file else None
        want = (q_mask[b][:, None] == 1) & (k_mask[b][None, :] == 1)
        check(f"{label}: attnscope's mask of item {b} is the padding",
              allowed is not None and np.array_equal(allowed, want), f"files {files}")
        csv_file = [f for f in files if f.startswith("probs") and f.endswith(".csv")]
        with open(os.path.join(out, csv_file[0]), encoding="utf-8") as f:
            rows = list(csv.reader(f))
        columns, row_labels = rows[0][1:], [r[0] for r in rows[1:]]
        print(f"      item {b} query labels: {row_labels}")
        print(f"      item {b} key labels:   {columns}")
        check(f"{label}: attnscope's labels of item {b} have no raw byte-level marks",
              not any(mark in text for text in columns + row_labels for mark in ("Ġ", "Ċ")))


# ----------------------------------------------------------------------------- main

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="folder to create for the models and bundles (must not exist)")
    parser.add_argument("--attnscope", help="the attnscope binary: also read every bundle back with it")
    args = parser.parse_args()
    if os.path.exists(args.out):
        print(f"check_export_transformers.py: {args.out}: already exists", file=sys.stderr)
        return 2
    started = time.time()
    import transformers
    import tokenizers
    print(f"transformers {transformers.__version__}, tokenizers {tokenizers.__version__}, torch {torch.__version__}")
    folders = save_models(os.path.join(args.out, "models"))
    styles = {"gpt2": "byte_level", "t5": "plain", "bart": "byte_level"}
    for name, folder in folders.items():
        bundle = os.path.join(args.out, "bundles", name)
        decoder = name != "gpt2"
        command = [sys.executable, EXPORTER, "hf", folder, "--out", bundle]
        for text in TEXTS:
            command += ["--text", text]
        for text in DECODER_TEXTS if decoder else []:
            command += ["--decoder-text", text]
        proc = subprocess.run(command, capture_output=True, text=True)
        check(f"{name}: export_attention.py hf {os.path.basename(folder)} exits 0", proc.returncode == 0,
              proc.stderr.strip()[-2000:])
        if proc.returncode != 0:
            continue
        tokenizer, maps, sides = reference(folder, DECODER_TEXTS)
        if not decoder:
            parts = [(bundle, "attentions", "encoder", "encoder")]
        else:
            parts = [(os.path.join(bundle, sub), key, q, k) for sub, key, q, k in (
                ("encoder_self_attention", "encoder_attentions", "encoder", "encoder"),
                ("decoder_self_attention", "decoder_attentions", "decoder", "decoder"),
                ("cross_attention", "cross_attentions", "decoder", "encoder"))]
        check(f"{name}: stdout lists the bundles written", proc.stdout.split() == [p[0] for p in parts], proc.stdout)
        for path, key, q, k in parts:
            label = f"{name} {os.path.basename(path) if decoder else 'bundle'}"
            check_bundle(label, path, maps[key], tokenizer, sides[q], sides[k], styles[name], q != k)
            if args.attnscope:
                check_with_attnscope(args.attnscope, label, path, sides[q], sides[k],
                                     os.path.join(args.out, "attnscope_exports"))
    failed = results.count(False)
    print(f"{'ALL PASS' if failed == 0 else f'{failed} FAILED'} ({len(results)} checks, {time.time() - started:.1f} s)")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
