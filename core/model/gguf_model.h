// GGUF files as models (model/gguf_model.cpp; docs/models.md, "GGUF files").
#pragma once

#include <string>

#include "model/model.h"
#include "tensor/gguf.h"

namespace attnscope {

// A regular file named *.gguf, or an Ollama blob (sha256-<hex>) that starts with "GGUF".
bool isGgufFile(const std::string& path);
// "Q4_K 62%, Q6_K 25%, F32 13%": the tensors' types by their share of the bytes, largest first.
std::string quantizationMix(const GgufHeader& header);
// The model in a GGUF file: its architecture's family, hyperparameters from the {arch}.* keys,
// matrices mapped as stored. InputError naming the file and the key or tensor on any problem;
// a file whose weights do not fit the memory budget is refused with the estimate first. The
// tokenizer from the metadata (model/gguf_tokenizer.h) when with_tokenizer. Its name (captions,
// Model::name) is `name` when given (an Ollama model's NAME:TAG: its blob's file name is a
// hash), else general.name, else the file's stem.
Model loadGgufModel(const std::string& path, bool with_tokenizer = true, const std::string& name = "");
// What loadGgufModel checks before it reads a weight (header, keys, the embedding, memory).
void checkGgufModel(const std::string& path);

}  // namespace attnscope
