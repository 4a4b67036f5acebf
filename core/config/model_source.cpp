#include "config/model_source.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <system_error>

#include "model/gguf_model.h"
#include "model/local_models.h"
#include "tensor/tensor.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

// What each shipped model is shown on when it is picked: a snippet with repeated names and
// brackets (previous-token, bracket and induction heads), a digit string to reverse.
struct SampleRow {
  const char* model;
  const char* text;
};
constexpr SampleRow kSamples[] = {
    {"python-code", kDefaultModelText},
    {"reverse-digits", "3111445858=8585441113."},
};

std::vector<fs::path> assetCandidates() {
  std::vector<fs::path> candidates;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path dir = exe.parent_path();
    candidates = {dir / "assets", dir / ".." / "assets", dir / ".." / "share" / "attnscope" / "assets"};
  }
#ifdef ATTNSCOPE_SOURCE_ASSETS
  candidates.emplace_back(ATTNSCOPE_SOURCE_ASSETS);
#endif
  return candidates;
}

}  // namespace

std::string assetsDir() {
  if (const char* env = std::getenv("ATTNSCOPE_ASSETS"); env && *env) return env;
  std::error_code ec;
  for (const fs::path& dir : assetCandidates())
    if (fs::is_directory(dir / "models", ec)) return fs::weakly_canonical(dir, ec).string();
  return "";
}

std::vector<ShippedModel> shippedModels() {
  std::vector<ShippedModel> models;
  const std::string assets = assetsDir();
  std::error_code ec;
  if (assets.empty() || !fs::is_directory(fs::path(assets) / "models", ec)) return models;
  for (const fs::directory_entry& entry : fs::directory_iterator(fs::path(assets) / "models", ec))
    if (isModelFolder(entry.path().string()))
      models.push_back({entry.path().filename().string(), entry.path().string()});
  std::sort(models.begin(), models.end(), [](const ShippedModel& a, const ShippedModel& b) { return a.name < b.name; });
  return models;
}

std::string sampleText(const std::string& model_name) {
  for (const SampleRow& row : kSamples)
    if (model_name == row.model) return row.text;
  return "";
}

std::string textForModel(const std::string& current, const std::string& model_name) {
  const std::string sample = sampleText(model_name);
  if (sample.empty()) return current;
  const bool untouched = current.empty() || std::any_of(std::begin(kSamples), std::end(kSamples),
                                                         [&](const SampleRow& row) { return current == row.text; });
  return untouched ? sample : current;
}

bool isModelFolder(const std::string& dir) {
  std::error_code ec;
  return !dir.empty() && (isStoreName(dir) || fs::is_regular_file(fs::path(dir) / "config.json", ec) || isGgufFile(dir));
}

std::string modelFolder(const Settings& settings) {
  const std::string& model = settings.model;
  if (model.find('/') != std::string::npos || isStoreName(model)) return model;  // loadModel resolves a store name
  const std::string assets = assetsDir();
  if (assets.empty()) {
    std::string looked;
    for (const fs::path& dir : assetCandidates()) looked += (looked.empty() ? "" : ", ") + dir.lexically_normal().string();
    throw InputError("shipped model '" + model + "': no assets/models folder found (looked in " + looked +
                     "); set ATTNSCOPE_ASSETS to the assets folder");
  }
  const fs::path folder = fs::path(assets) / "models" / model;
  if (!isModelFolder(folder.string()))
    throw InputError("shipped model '" + model + "': " + folder.string() + "/config.json not found");
  return folder.string();
}

Settings settingsForModel(Settings settings, const std::string& model, const std::string& text) {
  settings.source = InputSource::Model;
  settings.model_text = text;
  if (isStoreName(model)) {  // kept as named (resolved again on every load): a blob's path says nothing
    resolveModelName(model);  // an unknown name: its one-line error now
    settings.model = model;
    return settings;
  }
  const std::string folder = model;
  std::error_code ec;
  const fs::path absolute = fs::absolute(folder, ec);
  std::string path = (ec ? fs::path(folder) : absolute).lexically_normal().string();
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const std::string name = ollamaNameOfBlob(path);  // a blob's path reads as a hash: kept as its name
  settings.model = name.empty() ? path : name;
  return settings;
}

Settings settingsForModel(Settings base, const std::string& folder) {
  const std::string text = base.model_text;
  Settings settings = settingsForModel(std::move(base), folder, "");
  settings.model_text = textForModel(text, fs::path(settings.model).filename().string());
  return settings;
}

}  // namespace attnscope
