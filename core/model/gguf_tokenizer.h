// A GGUF file's tokenizer (model/gguf_tokenizer.cpp; docs/models.md, "GGUF files").
#pragma once

#include <optional>

#include "tensor/gguf.h"
#include "tokenizer/tokenizer.h"

namespace attnscope {

// tokenizer.ggml.model "gpt2": byte-level BPE by its merges, pre-tokenized by
// tokenizer.ggml.pre (default, llama3 / llama-bpe, qwen2, gpt-2, olmo, smollm; any other is
// refused in one line naming the file and the key); "llama": SentencePiece by scores with byte
// fallback (llama.cpp's SPM). nullopt for "none" and for the kinds not read yet ("bert"): the
// model then runs on ids.
std::optional<HfTokenizer> ggufTokenizer(const GgufFile& file);

}  // namespace attnscope
