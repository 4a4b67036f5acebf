#!/usr/bin/env python3
"""Makes reference outputs with the real Hugging Face `transformers` and `tokenizers` (on a
machine that has them; Debian 12 does not), for scripts/crosscheck_compare.py to check
attnscope against on any machine. Not part of CI.

    python3 scripts/crosscheck_transformers.py OUT

OUT/models/<name>/: a randomly initialised folder per family (save_pretrained: config.json in
the installed transformers' spelling, safetensors, tokenizer files), plus
    ids.json            the token ids run (and the text they came from, when there is one)
    attentions.npy      [n_layers, 1, H, L, L] float32 (output_attentions, eager attention)
    logits.npy          [L, V] float32
    hidden.npy          [n_layers + 1, L, D] float32 (output_hidden_states)
    greedy.json         20 greedy tokens after the ids (causal families)
OUT/tokenizers/<name>/: a tokenizer built with `tokenizers`, inside a tiny GPT-2 folder whose
vocabulary matches, and expected.json: [{text, ids}] from tokenizer(text) with
add_special_tokens=True.
"""
import json
import os
import sys

import numpy as np
import torch
import transformers
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

OUT = sys.argv[1]
torch.manual_seed(0)

CORPUS = [
    "The quick brown fox jumps over the lazy dog. " * 3,
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n",
    "Attention is all you need; attention maps show where each token looks.",
    "Café naïve résumé — Ελληνικά, русский язык, العربية, עברית, हिन्दी, 中文字符, 日本語のテキスト",
    "Numbers 12345 and 3.14159, emails a@b.com, URLs https://example.org/path?q=1",
    "    indented\tTabs\t\tand   runs of   spaces\n\n\nnewlines",
] * 4

TEXTS = [
    "Hello world", " leading space", "trailing space ", "  two  spaces  ", "\n\nnewlines\n",
    "def f(x):\n    return x * 2\n", "Café naïve résumé", "Ελληνικά русский العربية עברית हिन्दी",
    "中文字符和日本語", "emoji 🙂🚀 and ❤️", "1234567890 3.14", "tab\there", "MiXeD CaSe WORDS",
    "unseenwordxyz qqqzzz", "a", "", "<|special|> in text", "x  \t \n y",
]


def scale_weights(model, seed):
    """Weights large enough that attention is far from uniform."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=g) * (1.2 / p.shape[-1] ** 0.5))
            elif "norm" in name.lower() or "ln" in name.lower():
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))


def save_run(model, folder, ids, causal, dtype=None, shard=None):
    model.eval()
    if dtype is not None:  # save in dtype, run the saved weights read back in float32 (a fresh
        # model: .to(dtype) would also round RoPE's inverse-frequency buffers)
        model.to(dtype)
        model.save_pretrained(folder, safe_serialization=True, max_shard_size=shard or "5GB")
        model = type(model).from_pretrained(folder, dtype=torch.float32, attn_implementation="eager")
        model.eval()
    else:
        model.save_pretrained(folder, safe_serialization=True, max_shard_size=shard or "5GB")
    x = torch.tensor([ids])
    with torch.no_grad():
        out = model(x, output_attentions=True, output_hidden_states=True)
    np.save(os.path.join(folder, "attentions.npy"), torch.stack(out.attentions).numpy().astype(np.float32))
    np.save(os.path.join(folder, "logits.npy"), out.logits[0].numpy().astype(np.float32))
    np.save(os.path.join(folder, "hidden.npy"), torch.stack(out.hidden_states)[:, 0].numpy().astype(np.float32))
    with open(os.path.join(folder, "ids.json"), "w") as f:
        json.dump({"ids": ids}, f)
    if causal:
        with torch.no_grad():
            gen = model.generate(x, max_new_tokens=20, min_new_tokens=20, do_sample=False,
                                 pad_token_id=0, attention_mask=torch.ones_like(x))
        with open(os.path.join(folder, "greedy.json"), "w") as f:
            json.dump({"prompt": ids, "generated": gen[0, len(ids):].tolist()}, f)


def family_models():
    V, P = 97, 64
    common = dict(vocab_size=V, max_position_embeddings=P)
    llama = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, **common)
    rows = [
        ("gpt2", transformers.GPT2LMHeadModel,
         transformers.GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=V, n_positions=P, bos_token_id=1, eos_token_id=2), True, None, None),
        ("llama-gqa-llama3", transformers.LlamaForCausalLM,
         transformers.LlamaConfig(rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                                "high_freq_factor": 4.0, "original_max_position_embeddings": 8},
                                  **llama), True, None, None),
        ("llama-linear-bf16", transformers.LlamaForCausalLM,
         transformers.LlamaConfig(rope_scaling={"rope_type": "linear", "factor": 4.0}, **llama), True,
         torch.bfloat16, None),
        ("mistral-window5-shards", transformers.MistralForCausalLM,
         transformers.MistralConfig(sliding_window=5, **llama), True, None, "40KB"),
        ("qwen2-tied-f16", transformers.Qwen2ForCausalLM,
         transformers.Qwen2Config(tie_word_embeddings=True, **llama), True, torch.float16, None),
        ("gemma2", transformers.Gemma2ForCausalLM,
         transformers.Gemma2Config(head_dim=16, query_pre_attn_scalar=16, attn_logit_softcapping=50.0,
                                   final_logit_softcapping=30.0, sliding_window=4, num_hidden_layers=3,
                                   **{k: v for k, v in llama.items() if k != "num_hidden_layers"}), True, None, None),
        ("neox-partial", transformers.GPTNeoXForCausalLM,
         transformers.GPTNeoXConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                    num_attention_heads=4, rotary_pct=0.25, use_parallel_residual=True, **common),
         True, None, None),
        # The 2025-26 families (issue 38); getattr: an older transformers lacks some (the row fails alone).
        ("qwen3-headdim", getattr(transformers, "Qwen3ForCausalLM", None),
         getattr(transformers, "Qwen3Config", dict)(head_dim=24, **llama), True, None, None),
        ("gemma3-text", getattr(transformers, "Gemma3ForCausalLM", None),
         getattr(transformers, "Gemma3TextConfig", dict)(
             head_dim=16, query_pre_attn_scalar=16, sliding_window=4, num_hidden_layers=3,
             layer_types=["sliding_attention", "sliding_attention", "full_attention"], rope_local_base_freq=100.0,
             final_logit_softcapping=30.0, **{k: v for k, v in llama.items() if k != "num_hidden_layers"}),
         True, None, None),
        ("phi3-partial", getattr(transformers, "Phi3ForCausalLM", None),
         getattr(transformers, "Phi3Config", dict)(partial_rotary_factor=0.75, pad_token_id=0, **llama),
         True, None, None),
        ("olmo2", getattr(transformers, "Olmo2ForCausalLM", None),
         getattr(transformers, "Olmo2Config", dict)(pad_token_id=0, **llama), True, None, None),
        ("smollm3-nope", getattr(transformers, "SmolLM3ForCausalLM", None),
         getattr(transformers, "SmolLM3Config", dict)(no_rope_layers=[1, 0], pad_token_id=0, **llama),
         True, None, None),
        ("bert-mlm", transformers.BertForMaskedLM,
         transformers.BertConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                 num_attention_heads=4, **common), False, None, None),
    ]
    for name, cls, config, causal, dtype, shard in rows:
        config._attn_implementation = "eager"
        try:
            model = cls(config)
            scale_weights(model, len(name))
            rng = np.random.default_rng(len(name))
            ids = rng.integers(0, V, 24).tolist()
            save_run(model, os.path.join(OUT, "models", name), ids, causal, dtype, shard)
            print("made", name)
        except Exception as e:  # keep going: one family's failure must not hide the others'
            print("FAILED", name, type(e).__name__, e)


def byte_level_bpe():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=True)
    tok.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>"],
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return tok, dict(eos_token="<|endoftext|>", bos_token="<|endoftext|>")


def llama_byte_fallback():
    byte_tokens = [f"<0x{b:02X}>" for b in range(256)]
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    tok.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=450, special_tokens=["<unk>", "<s>", "</s>"] + byte_tokens))
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                       special_tokens=[("<s>", tok.token_to_id("<s>"))])
    return tok, dict(bos_token="<s>", eos_token="</s>", unk_token="<unk>")


def metaspace_bpe():
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="first")
    tok.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=420, special_tokens=["<unk>", "<s>", "</s>"]
                                                        + [f"<0x{b:02X}>" for b in range(256)]))
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[
        ("<s>", tok.token_to_id("<s>")), ("</s>", tok.token_to_id("</s>"))])
    return tok, dict(bos_token="<s>", eos_token="</s>", unk_token="<unk>")


def bert_wordpiece():
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=None, clean_text=True,
                                                handle_chinese_chars=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(CORPUS, trainers.WordPieceTrainer(vocab_size=300, special_tokens=[
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    tok.post_processor = processors.BertProcessing(("[SEP]", tok.token_to_id("[SEP]")),
                                                   ("[CLS]", tok.token_to_id("[CLS]")))
    return tok, dict(unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]", mask_token="[MASK]")


def split_digits_added():
    pattern = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(pattern=__import__("tokenizers").Regex(pattern), behavior="isolated"),
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=420, special_tokens=["<|begin|>"],
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    from tokenizers import AddedToken
    tok.add_special_tokens([AddedToken("<|special|>", normalized=False)])
    tok.add_tokens([AddedToken(" runs of", normalized=True, lstrip=False), AddedToken("MiXeD", single_word=True)])
    tok.post_processor = processors.TemplateProcessing(single="<|begin|> $A", special_tokens=[
        ("<|begin|>", tok.token_to_id("<|begin|>"))])
    return tok, dict(bos_token="<|begin|>")


def lowercase_strip_wordpiece():
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", continuing_subword_prefix="##"))
    tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.Lowercase(), normalizers.StripAccents()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace(), pre_tokenizers.Digits()])
    tok.train_from_iterator(CORPUS, trainers.WordPieceTrainer(vocab_size=260, special_tokens=["[UNK]", "[CLS]", "[SEP]"]))
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[
        ("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    return tok, dict(unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]")


def tokenizer_folders():
    for name, make in [("byte-level-bpe", byte_level_bpe), ("llama-byte-fallback", llama_byte_fallback),
                       ("metaspace-bpe", metaspace_bpe), ("bert-wordpiece", bert_wordpiece),
                       ("split-digits-added", split_digits_added), ("nfd-lower-strip", lowercase_strip_wordpiece)]:
        folder = os.path.join(OUT, "tokenizers", name)
        try:
            tok, special = make()
            fast = PreTrainedTokenizerFast(tokenizer_object=tok, **special)
            V = len(fast)
            config = transformers.GPT2Config(n_embd=16, n_layer=1, n_head=2, vocab_size=V, n_positions=512)
            transformers.GPT2LMHeadModel(config).save_pretrained(folder, safe_serialization=True)
            fast.save_pretrained(folder)
            expected = [{"text": t, "ids": fast(t, add_special_tokens=True)["input_ids"]} for t in TEXTS + CORPUS[:6]]
            with open(os.path.join(folder, "expected.json"), "w") as f:
                json.dump(expected, f, ensure_ascii=False)
            print("made tokenizer", name, "V", V)
        except Exception as e:
            print("FAILED tokenizer", name, type(e).__name__, e)


if __name__ == "__main__":
    import tokenizers
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "versions.json"), "w") as f:
        json.dump({"transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
                   "torch": torch.__version__}, f)
    print("transformers", transformers.__version__, "tokenizers", tokenizers.__version__, "torch", torch.__version__)
    family_models()
    tokenizer_folders()
