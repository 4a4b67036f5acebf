// The models already on this machine (`attnscope models`, the Open dialog's "On this machine"),
// found without any network in the stores other tools keep them in:
//   hf        the Hugging Face cache: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub;
//             models--ORG--NAME/snapshots/<rev> for the rev in refs/main (a folder with config.json,
//             or each .gguf file in it)
//   ollama    $OLLAMA_MODELS, else ~/.ollama/models: manifests/<registry>/<namespace>/<name>/<tag>
//             (JSON) whose application/vnd.ollama.image.model layer names blobs/sha256-<hex>
//   lmstudio  ~/.lmstudio/models and ~/.cache/lm-studio/models: PUBLISHER/REPO/FILE.gguf
//   llamacpp  $LLAMA_CACHE, else ~/.cache/llama.cpp: FILE.gguf
// and the names `hf:ORG/NAME` and `ollama:NAME[:TAG]` a MODEL may be given as.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attnscope {

struct LocalModel {
  std::string name;          // hf: ORG/NAME (ORG/NAME/FILE.gguf for a GGUF repo's files); ollama: NAME:TAG
                             // (NS/NAME:TAG outside `library`, REGISTRY/NS/NAME:TAG off registry.ollama.ai);
                             // lmstudio: PUBLISHER/REPO/FILE.gguf; llamacpp: FILE.gguf
  std::string source;        // "hf", "ollama", "lmstudio", "llamacpp"
  std::string path;          // the model folder or GGUF file to open
  std::string format;        // "hf" or "gguf"
  std::string architecture;  // config.json's model_type or general.architecture ("" when unreadable)
  uint64_t size_bytes = 0;   // the files' bytes (a folder: every file in it, links followed)
  std::string quantization;  // GGUF: the tensor types by bytes ("Q4_K 62%, Q6_K 25%, F32 13%"); a folder:
                             // config.json's quantization_config.quant_method, else its torch_dtype / dtype
};

// Every model in the stores, in the order hf, ollama, lmstudio, llamacpp, each by name. A store
// that is missing or unreadable lists nothing; a file that is not a readable model is listed
// with an empty architecture.
std::vector<LocalModel> localModels();

// "hf:ORG/NAME" (or "hf:ORG/NAME/FILE.gguf") for a path inside the Hugging Face cache's
// models--ORG--NAME/snapshots/<rev>, told from the path alone (a rev hash is no name); "" otherwise.
std::string hubName(const std::string& path);

// "ollama:NAME:TAG" for the path of a model's blob in Ollama's store (OLLAMA_MODELS, else
// ~/.ollama/models), by its manifests; "" for any other path (a blob of another store too: a
// name resolves in this one).
std::string ollamaNameOfBlob(const std::string& path);
// The MODEL that opens m: its store name where its store has names (hf:NAME, ollama:NAME),
// else its path.
std::string modelNameOf(const LocalModel& m);
// Whether `model` is a store name (starts with "hf:" or "ollama:").
bool isStoreName(const std::string& model);
// How a MODEL from a store reads where it is shown (the Models box, the window title): "ollama:
// NAME:TAG" for ollama:NAME:TAG, "hf: ORG/NAME" for hf:ORG/NAME or a path in the Hugging Face
// cache; "" for anything else.
std::string storeLabel(const std::string& model);
// storeLabel, else the path's last part (a folder's or file's name, a shipped model's name).
std::string modelShortName(const std::string& model);
// The path a MODEL names: a store name resolved in the stores above, anything else unchanged.
// InputError for a name that is in no store: "hf:ORG/NAME: no such model in the Hugging Face
// cache (DIR); nearest: hf:A/B, hf:C/D" (up to three names by edit distance).
std::string resolveModelName(const std::string& model);

}  // namespace attnscope
