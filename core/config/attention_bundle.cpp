#include "config/attention_bundle.h"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "config/bundle.h"
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
// `position<TAB>id<TAB>token[<TAB>unknown[<TAB>generated]]` with position = its line index.
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
    if (first < 0 && label_end != std::string::npos && line.size() >= 10 &&
        line.compare(line.size() - 10, 10, "\tgenerated") == 0)
      first = static_cast<int64_t>(t);
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

  if (present(root / "tokens.txt"))
    imported.query_tokens = {modelRunLabels(readLabelFile(root / "tokens.txt", L, maps_name + " has L ="),
                                            &imported.first_generated)};
  if (present(root / "key_tokens.txt"))
    imported.key_tokens = {readLabelFile(root / "key_tokens.txt", S, maps_name + " has S =")};
  else if (S == L)
    imported.key_tokens = imported.query_tokens;

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
