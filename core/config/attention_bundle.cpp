#include "config/attention_bundle.h"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "config/bundle.h"
#include "config/token_file.h"
#include "tensor/memory.h"
#include "tensor/npy.h"
#include "tensor/npz.h"
#include "tensor/text_file.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

bool present(const fs::path& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

// One label per line (a final newline ends the last label, it does not add one).
std::vector<std::string> readLabelFile(const fs::path& path, int64_t expected, const std::string& what) {
  const std::vector<std::string> labels = readLines(path.string(), kMaxLabelBytes, "a token list");
  if (static_cast<int64_t>(labels.size()) != expected)
    throw InputError(path.string() + ": " + std::to_string(labels.size()) + " labels but " + what + " " +
                     std::to_string(expected));
  return labels;
}

// tokens.txt as `model run` / `model generate` write it: every line
// `position<TAB>id<TAB>token[<TAB>unknown[<TAB>generated[<TAB>piece]]]` with position = its line index.
// Then the labels are the third column and *first_generated the first line marked
// `generated` (-1 when none); otherwise the lines are the labels, unchanged.
std::vector<std::string> modelRunLabels(std::vector<std::string> lines, int64_t* first_generated) {
  std::vector<std::string> labels;
  int64_t first = -1;
  for (size_t t = 0; t < lines.size(); ++t) {
    const std::string& line = lines[t];
    const std::string index = std::to_string(t) + "\t";
    const size_t id_end = line.find('\t', index.size());
    if (line.compare(0, index.size(), index) != 0 || id_end == std::string::npos || id_end == index.size() ||
        line.find_first_not_of("0123456789", index.size()) != id_end)
      return lines;
    const size_t label_end = line.find('\t', id_end + 1);
    labels.push_back(line.substr(id_end + 1, label_end == std::string::npos ? std::string::npos : label_end - id_end - 1));
    if (first < 0 && label_end != std::string::npos) {  // the fifth column: `generated`
      const size_t flag_end = line.find('\t', label_end + 1);
      if (flag_end != std::string::npos && line.compare(flag_end + 1, 9, "generated") == 0 &&
          (line.size() == flag_end + 10 || line[flag_end + 10] == '\t'))
        first = static_cast<int64_t>(t);
    }
  }
  *first_generated = first;
  return labels;
}

// Refuses a wrong rank, an empty axis, or maps too large for memory, before reading data.
void checkMapsShape(const std::string& file, const Shape& shape) {
  if (shape.size() != 4 && shape.size() != 5)
    throw InputError(file + ": expected [layers, B, H, L, S] or [B, H, L, S], got " + shapeToString(shape));
  for (int64_t dim : shape)
    if (dim < 1) throw InputError(file + ": expected no empty axis, got " + shapeToString(shape));
  // The float32 maps, plus the file's bytes while they are converted (float64 at most).
  const uint64_t count = static_cast<uint64_t>(numel(shape));
  try {
    checkMemory(count * (sizeof(float) + sizeof(double)));
  } catch (const InputError& e) {
    throw InputError(file + " " + shapeToString(shape) + ": " + e.what());
  }
}

// tokens.json (labels or raw pieces per item), or tokens.txt / key_tokens.txt (one row).
void readTokens(const fs::path& root, int64_t B, int64_t L, int64_t S, const std::string& maps_name,
                ImportedMaps& imported) {
  const fs::path json_path = root / "tokens.json";
  if (present(json_path)) {
    for (const char* text : {"tokens.txt", "key_tokens.txt"})
      if (present(root / text))
        throw InputError(root.string() + ": holds both tokens.json and " + text + "; keep one");
    BundleTokens tokens = readTokensJson(json_path.string(), B, L, S, maps_name);
    imported.query_tokens = std::move(tokens.query_labels);
    imported.key_tokens = std::move(tokens.key_labels);
    imported.query_pieces = std::move(tokens.query_pieces);
    imported.key_pieces = std::move(tokens.key_pieces);
    return;
  }
  if (present(root / "tokens.txt"))
    imported.query_tokens = {modelRunLabels(readLabelFile(root / "tokens.txt", L, maps_name + " has L ="),
                                            &imported.first_generated)};
  if (present(root / "key_tokens.txt"))
    imported.key_tokens = {readLabelFile(root / "key_tokens.txt", S, maps_name + " has S =")};
  else if (S == L)
    imported.key_tokens = imported.query_tokens;
}

// FILE [B, n] of 0 and 1 (bool, integer or float): 1 = a real token, 0 = padding.
std::vector<uint8_t> readTokenMask(const fs::path& path, int64_t B, int64_t n, const char* axis) {
  const NpyArray mask = readNpy(path.string());
  if (mask.shape != Shape{B, n})
    throw InputError(path.string() + ": expected [B, " + axis + "] = [" + std::to_string(B) + ", " +
                     std::to_string(n) + "] (1 = token, 0 = padding), got " + shapeToString(mask.shape));
  std::vector<uint8_t> flags(mask.values.size());
  for (size_t c = 0; c < flags.size(); ++c) {
    if (mask.values[c] != 0.0 && mask.values[c] != 1.0)
      throw InputError(path.string() + ": expected 0 (padding) or 1 (token), got " + std::to_string(mask.values[c]) +
                       " at [" + std::to_string(c / n) + ", " + std::to_string(c % n) + "]");
    flags[c] = mask.values[c] != 0.0;
  }
  return flags;
}

// attention_mask.npy [B, S] (keys) and query_mask.npy [B, L] (queries; default: the
// attention mask when S == L) as one [B, L, S] mask; empty when the bundle has neither.
std::vector<uint8_t> readPadding(const fs::path& root, int64_t B, int64_t L, int64_t S) {
  const fs::path keys_path = root / "attention_mask.npy", queries_path = root / "query_mask.npy";
  const bool keys = present(keys_path), queries = present(queries_path);
  if (!keys && !queries) return {};
  const std::vector<uint8_t> key_ok = keys ? readTokenMask(keys_path, B, S, "S") : std::vector<uint8_t>(B * S, 1);
  const std::vector<uint8_t> query_ok = queries ? readTokenMask(queries_path, B, L, "L")
                                        : keys && S == L ? key_ok
                                                         : std::vector<uint8_t>(B * L, 1);
  std::vector<uint8_t> allowed(static_cast<size_t>(B * L * S));  // [B, L, S]
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < S; ++j) allowed[(b * L + i) * S + j] = query_ok[b * L + i] && key_ok[b * S + j];
  return allowed;
}

// A generation bundle's steps.json (config/generation_bundle.h stepsJson): each step's top
// guesses and chosen token, at the position before it. InputError naming the file and step.
std::vector<NextTokenPredictions> readSteps(const fs::path& path, int64_t first_generated, int64_t L) {
  const nlohmann::json steps = readJsonFile(path.string(), kMaxLabelBytes, "a steps list");
  if (!steps.is_array()) throw InputError(path.string() + ": expected a list of steps");
  std::vector<NextTokenPredictions> predictions(static_cast<size_t>(L));
  for (size_t i = 0; i < steps.size(); ++i) {
    const std::string where = path.string() + ": step " + std::to_string(i);
    try {
      const nlohmann::json& step = steps[i];
      const int64_t position = step.at("position").get<int64_t>();
      if (position < std::max<int64_t>(1, first_generated) || position >= L)
        throw InputError(where + ": position " + std::to_string(position) + " is not a generated one (" +
                         std::to_string(first_generated) + ".." + std::to_string(L - 1) + ")");
      NextTokenPredictions& p = predictions[static_cast<size_t>(position - 1)];
      for (const nlohmann::json& guess : step.at("top")) p.top.push_back({guess.at(1).get<std::string>(), guess.at(2).get<double>()});
      p.actual = step.at("token").get<std::string>();
      p.actual_prob = step.at("prob").get<double>();
      p.actual_rank = step.at("rank").get<int64_t>();
      p.actual_is_top = p.actual_rank == 1;
    } catch (const nlohmann::json::exception& e) {
      throw InputError(where + ": expected {position, token, prob, rank, top: [[id, token, prob]]} (" + e.what() + ")");
    }
  }
  return predictions;
}

}  // namespace

BundleKind bundleKind(const std::string& dir) {
  const fs::path root(dir);
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    throw InputError(dir + ": " + (present(root) ? "not a directory" : "no such bundle directory"));
  const bool maps = present(root / "attentions.npy") || present(root / "attentions.npz");
  const bool tensors = present(root / "query.npy");
  if (maps && tensors)
    throw InputError(dir + ": holds both attentions.npy/.npz (maps computed elsewhere) and query.npy (inputs to "
                           "compute); keep one");
  return maps ? BundleKind::Attentions : BundleKind::Tensors;
}

ImportedMaps loadAttentionBundle(const std::string& dir) {
  const fs::path root(dir);
  const fs::path npy = root / "attentions.npy", npz = root / "attentions.npz";
  if (present(npy) && present(npz))
    throw InputError(dir + ": holds both attentions.npy and attentions.npz; keep one");
  ImportedMaps imported;
  if (present(npy)) {
    imported.origin = npy.string();
    imported.maps = readNpyFloat(imported.origin, [&](const Shape& s) { checkMapsShape(npy.string(), s); });
  } else {
    imported.origin = npz.string();
    const std::vector<std::string> names = npzArrayNames(imported.origin);
    if (std::find(names.begin(), names.end(), "attentions") == names.end())
      throw InputError(imported.origin + ": no array named 'attentions' (save it as np.savez(f, attentions=maps))");
    imported.maps = readNpzFloat(imported.origin, "attentions",
                                 [&](const Shape& s) { checkMapsShape(npz.string(), s); });
  }
  Shape& shape = imported.maps.shape;
  if (shape.size() == 4) shape.insert(shape.begin(), 1);  // one layer
  const int64_t layers = shape[0], L = shape[3], S = shape[4];
  const std::string maps_name = fs::path(imported.origin).filename().string();

  readTokens(root, shape[1], L, S, maps_name, imported);
  imported.allowed = readPadding(root, shape[1], L, S);
  if (imported.first_generated >= 0 && present(root / "steps.json"))
    imported.predictions = readSteps(root / "steps.json", imported.first_generated, L);
  if (imported.first_generated >= 0 && present(root / "generated.txt"))
    imported.generated_text = readSmallFile((root / "generated.txt").string(), kMaxLabelBytes, "a generated text");

  const nlohmann::json meta = readBundleMeta(dir);
  const std::string json_path = (root / "bundle.json").string();
  auto text = [&](const char* key, std::string& out) {
    if (!meta.contains(key)) return;
    if (!meta[key].is_string()) throw InputError(json_path + ": \"" + key + "\" must be a string");
    out = meta[key].get<std::string>();
  };
  text("model", imported.model);
  text("notes", imported.notes);
  if (meta.contains("layer_names")) {
    const auto& names = meta["layer_names"];
    if (!names.is_array() || static_cast<int64_t>(names.size()) != layers)
      throw InputError(json_path + ": \"layer_names\" must be a list of " + std::to_string(layers) +
                       " strings (one per layer of " + maps_name + ")");
    for (const auto& name : names) {
      if (!name.is_string()) throw InputError(json_path + ": \"layer_names\" must hold strings");
      imported.layer_names.push_back(name.get<std::string>());
    }
  }
  return imported;
}

}  // namespace attnscope
