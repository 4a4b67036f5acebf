#include "model/local_models.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "model/gguf_model.h"
#include "tensor/gguf.h"
#include "tensor/tensor.h"
#include "tensor/text_file.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}
fs::path home() { return env("HOME"); }

fs::path hfHub() {
  if (!env("HF_HUB_CACHE").empty()) return env("HF_HUB_CACHE");
  if (!env("HF_HOME").empty()) return fs::path(env("HF_HOME")) / "hub";
  return home() / ".cache" / "huggingface" / "hub";
}
fs::path ollamaModels() { return env("OLLAMA_MODELS").empty() ? home() / ".ollama" / "models" : fs::path(env("OLLAMA_MODELS")); }
fs::path llamaCache() { return env("LLAMA_CACHE").empty() ? home() / ".cache" / "llama.cpp" : fs::path(env("LLAMA_CACHE")); }
std::vector<fs::path> lmStudioFolders() { return {home() / ".lmstudio" / "models", home() / ".cache" / "lm-studio" / "models"}; }

std::vector<fs::directory_entry> entriesOf(const fs::path& dir) {
  std::vector<fs::directory_entry> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) out.push_back(*it);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.path() < b.path(); });
  return out;
}

json readJson(const fs::path& path) {
  try {
    return json::parse(readSmallFile(path.string(), 16u << 20, "a JSON file"));
  } catch (const std::exception&) {
    return json();
  }
}

uint64_t bytesOf(const fs::path& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return fs::file_size(path, ec);
  uint64_t total = 0;
  for (fs::recursive_directory_iterator it(path, fs::directory_options::follow_directory_symlink, ec), end; !ec && it != end;
       it.increment(ec))
    if (fs::is_regular_file(it->path(), ec)) total += fs::file_size(it->path(), ec);
  return total;
}

// A GGUF file's or a folder's architecture and quantization (empty when unreadable).
void describe(LocalModel& m) {
  m.size_bytes = bytesOf(m.path);
  if (m.format == "gguf") {
    try {
      const GgufFile file(m.path);
      m.architecture = file.string("general.architecture", "");
      m.quantization = quantizationMix(file.header());
    } catch (const std::exception&) {
    }
    return;
  }
  const json config = readJson(fs::path(m.path) / "config.json");
  if (!config.is_object()) return;
  m.architecture = config.value("model_type", "");
  const json& q = config.contains("quantization_config") ? config["quantization_config"] : json();
  if (q.is_object() && q.contains("quant_method") && q["quant_method"].is_string()) m.quantization = q["quant_method"];
  else if (config.contains("torch_dtype") && config["torch_dtype"].is_string()) m.quantization = config["torch_dtype"];
  else if (config.contains("dtype") && config["dtype"].is_string()) m.quantization = config["dtype"];
}

// Listed without reading it (resolving a name needs no more); localModels describes each.
void add(std::vector<LocalModel>& out, std::string name, const char* source, const fs::path& path, const char* format) {
  out.push_back({std::move(name), source, path.string(), format, "", 0, ""});
}

bool isGgufName(const fs::path& p) { return p.extension() == ".gguf"; }

void scanHf(std::vector<LocalModel>& out) {
  for (const fs::directory_entry& repo : entriesOf(hfHub())) {
    const std::string dir = repo.path().filename().string();
    if (dir.rfind("models--", 0) != 0) continue;
    std::string name = dir.substr(8);  // ORG--NAME -> ORG/NAME
    if (const size_t sep = name.find("--"); sep != std::string::npos) name.replace(sep, 2, "/");
    std::ifstream ref(repo.path() / "refs" / "main");
    std::string rev;
    if (!std::getline(ref, rev) || rev.empty()) continue;
    const fs::path snapshot = repo.path() / "snapshots" / rev;
    std::error_code ec;
    if (fs::is_regular_file(snapshot / "config.json", ec)) {
      add(out, name, "hf", snapshot, "hf");
      continue;
    }
    for (const fs::directory_entry& file : entriesOf(snapshot))
      if (isGgufName(file.path())) add(out, name + "/" + file.path().filename().string(), "hf", file.path(), "gguf");
  }
}

// manifests/<registry>/<namespace>/<name>/<tag>: the blob of its model layer.
void scanOllama(std::vector<LocalModel>& out) {
  const fs::path root = ollamaModels();
  for (const fs::directory_entry& registry : entriesOf(root / "manifests"))
    for (const fs::directory_entry& ns : entriesOf(registry.path()))
      for (const fs::directory_entry& model : entriesOf(ns.path()))
        for (const fs::directory_entry& tag : entriesOf(model.path())) {
          const json manifest = readJson(tag.path());
          if (!manifest.is_object() || !manifest.contains("layers") || !manifest["layers"].is_array()) continue;
          for (const json& layer : manifest["layers"]) {
            if (!layer.is_object() || layer.value("mediaType", "") != "application/vnd.ollama.image.model") continue;
            std::string digest = layer.value("digest", "");
            if (digest.rfind("sha256:", 0) != 0) continue;
            std::string name = model.path().filename().string() + ":" + tag.path().filename().string();
            if (ns.path().filename() != "library" || registry.path().filename() != "registry.ollama.ai")
              name = ns.path().filename().string() + "/" + name;
            if (registry.path().filename() != "registry.ollama.ai") name = registry.path().filename().string() + "/" + name;
            add(out, name, "ollama", root / "blobs" / ("sha256-" + digest.substr(7)), "gguf");
          }
        }
}

// Every .gguf file under `root`, named by its path from there.
void scanGgufTree(std::vector<LocalModel>& out, const fs::path& root, const char* source, int depth) {
  std::error_code ec;
  std::vector<fs::path> files;
  for (fs::recursive_directory_iterator it(root, fs::directory_options::follow_directory_symlink, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it.depth() >= depth) it.disable_recursion_pending();
    if (isGgufName(it->path()) && fs::is_regular_file(it->path(), ec)) files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) add(out, file.lexically_relative(root).string(), source, file, "gguf");
}

std::string sourceTitle(const std::string& source) {
  return source == "hf" ? "the Hugging Face cache (" + hfHub().string() + ")" : "Ollama's models (" + ollamaModels().string() + ")";
}

// Levenshtein distance, case-insensitive.
size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) == std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// ollama:NAME[:TAG] as the store names it: tag latest by default, namespace library dropped.
std::string ollamaKey(std::string name) {
  if (name.find(':') == std::string::npos) name += ":latest";
  if (name.rfind("library/", 0) == 0) name = name.substr(8);
  if (name.rfind("registry.ollama.ai/", 0) == 0) return ollamaKey(name.substr(19));
  return name;
}

}  // namespace

std::vector<LocalModel> localModels() {
  std::vector<LocalModel> out;
  scanHf(out);
  scanOllama(out);
  for (const fs::path& root : lmStudioFolders()) scanGgufTree(out, root, "lmstudio", 3);
  scanGgufTree(out, llamaCache(), "llamacpp", 1);
  const auto rank = [](const LocalModel& m) {
    const char* order[] = {"hf", "ollama", "lmstudio", "llamacpp"};
    return std::find(std::begin(order), std::end(order), m.source) - std::begin(order);
  };
  std::stable_sort(out.begin(), out.end(), [&](const LocalModel& a, const LocalModel& b) {
    return rank(a) != rank(b) ? rank(a) < rank(b) : a.name < b.name;
  });
  for (LocalModel& m : out) describe(m);
  return out;
}

std::string hubName(const std::string& path) {
  fs::path snapshot = fs::path(path).lexically_normal();
  if (!snapshot.has_filename()) snapshot = snapshot.parent_path();  // "REV/"
  const std::string file = isGgufName(snapshot) ? "/" + snapshot.filename().string() : "";
  if (!file.empty()) snapshot = snapshot.parent_path();
  const std::string repo = snapshot.parent_path().parent_path().filename().string();
  if (snapshot.parent_path().filename() != "snapshots" || repo.rfind("models--", 0) != 0) return "";
  std::string name = repo.substr(8);
  if (const size_t sep = name.find("--"); sep != std::string::npos) name.replace(sep, 2, "/");
  return "hf:" + name + file;
}

bool isStoreName(const std::string& model) { return model.rfind("hf:", 0) == 0 || model.rfind("ollama:", 0) == 0; }

std::string ollamaNameOfBlob(const std::string& path) {
  const fs::path blob = fs::path(path).lexically_normal();
  if (blob.parent_path().filename() != "blobs" || blob.filename().string().rfind("sha256-", 0) != 0) return "";
  std::error_code ec;
  if (!fs::equivalent(blob.parent_path().parent_path(), ollamaModels(), ec)) return "";  // a name resolves in this store only
  std::vector<LocalModel> models;
  scanOllama(models);
  for (const LocalModel& m : models)
    if (fs::equivalent(m.path, blob, ec)) return "ollama:" + m.name;
  return "";
}

std::string modelNameOf(const LocalModel& m) {
  return m.source == "hf" || m.source == "ollama" ? m.source + ":" + m.name : m.path;
}

std::string storeLabel(const std::string& model) {
  const std::string name = isStoreName(model) ? model : hubName(model);
  if (name.empty()) return "";
  const size_t colon = name.find(':');
  const std::string rest = name.substr(colon + 1);
  return name.substr(0, colon + 1) + " " + (name.rfind("ollama:", 0) == 0 ? ollamaKey(rest) : rest);  // the tag it resolves to
}

std::string modelShortName(const std::string& model) {
  const std::string label = storeLabel(model);
  if (!label.empty()) return label;
  const fs::path p = fs::path(model).lexically_normal();
  return (p.has_filename() ? p : p.parent_path()).filename().string();
}

std::string resolveModelName(const std::string& model) {
  if (!isStoreName(model)) return model;
  const std::string source = model.substr(0, model.find(':'));
  const std::string asked = model.substr(source.size() + 1);
  const std::string key = source == "ollama" ? ollamaKey(asked) : asked;
  std::vector<LocalModel> store;
  if (source == "hf") scanHf(store);
  else scanOllama(store);
  std::vector<const LocalModel*> gguf_files;  // an hf repo of GGUF files: the one file it has
  for (const LocalModel& m : store) {
    if (m.name == key) return m.path;
    if (source == "hf" && m.name.rfind(key + "/", 0) == 0) gguf_files.push_back(&m);
  }
  if (gguf_files.size() == 1) return gguf_files.front()->path;
  std::vector<std::pair<size_t, std::string>> near;
  for (const LocalModel& m : store) near.emplace_back(editDistance(key, m.name), source + ":" + m.name);
  std::stable_sort(near.begin(), near.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string list;
  for (size_t i = 0; i < near.size() && i < 3; ++i) list += (i ? ", " : "") + near[i].second;
  throw InputError(model + ": no such model in " + sourceTitle(source) +
                   (gguf_files.size() > 1 ? "; it holds several GGUF files, name one" : "") +
                   (list.empty() ? " (it holds none)" : "; nearest: " + list));
}

}  // namespace attnscope
