#include "config/open_targets.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "config/model_source.h"

namespace attnscope {
namespace fs = std::filesystem;
namespace {

// A settings file is a few KB; bigger JSON files (tokenizer.json, ...) are not read, so a
// folder of large JSON files still lists at typing speed.
constexpr std::uintmax_t kSettingsMaxBytes = 64 << 10;

bool present(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

bool isSettingsFile(const fs::path& path) {
  std::error_code ec;
  if (path.extension() != ".json" || !fs::is_regular_file(path, ec)) return false;
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec || size > kSettingsMaxBytes) return false;
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  return !j.is_discarded() && j.is_object() && j.contains("source") && j["source"].is_string();
}

// Folders before files; ".." before everything.
int listOrder(const BrowseEntry& e) { return e.name == ".." ? 0 : e.kind == OpenKind::Settings ? 2 : 1; }

}  // namespace

const char* openKindLabel(OpenKind kind) {
  switch (kind) {
    case OpenKind::Model: return "model";
    case OpenKind::TensorBundle: return "tensor bundle";
    case OpenKind::AttentionBundle: return "attention bundle";
    case OpenKind::Settings: return "settings";
    case OpenKind::Folder:
    case OpenKind::Other: return "";
  }
  return "";
}

bool opensDirectly(OpenKind kind) { return kind != OpenKind::Folder && kind != OpenKind::Other; }

OpenKind openKind(const std::string& path) {
  std::error_code ec;
  const fs::path p(path.empty() ? "." : path);
  if (!fs::is_directory(p, ec)) {
    if (isModelFolder(p.string())) return OpenKind::Model;  // a GGUF file
    return isSettingsFile(p) ? OpenKind::Settings : OpenKind::Other;
  }
  if (present(p / "config.json")) return OpenKind::Model;
  if (present(p / "attentions.npy") || present(p / "attentions.npz")) return OpenKind::AttentionBundle;
  if (present(p / "query.npy")) return OpenKind::TensorBundle;
  return OpenKind::Folder;
}

BrowsePath splitBrowsePath(const std::string& path_input) {
  const size_t slash = path_input.rfind('/');
  if (slash == std::string::npos) return {"", path_input};
  return {path_input.substr(0, slash + 1), path_input.substr(slash + 1)};
}

std::vector<BrowseEntry> listBrowseFolder(const std::string& folder, const std::string& prefix, size_t limit) {
  std::vector<BrowseEntry> entries;
  const fs::path root(folder.empty() ? "." : folder);
  std::error_code ec;
  if (fs::absolute(root, ec).lexically_normal() != fs::path("/") && std::string("..").rfind(prefix, 0) == 0)
    entries.push_back({"..", OpenKind::Folder});
  const bool hidden = !prefix.empty() && prefix[0] == '.';
  for (fs::directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end && entries.size() < limit; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0 || (name[0] == '.' && !hidden)) continue;
    const OpenKind kind = openKind(it->path().string());
    if (kind != OpenKind::Other) entries.push_back({name, kind});
  }
  std::sort(entries.begin(), entries.end(), [](const BrowseEntry& a, const BrowseEntry& b) {
    return listOrder(a) != listOrder(b) ? listOrder(a) < listOrder(b) : a.name < b.name;
  });
  return entries;
}

std::string completeBrowsePath(const std::string& path_input, const std::vector<BrowseEntry>& entries) {
  const BrowsePath split = splitBrowsePath(path_input);
  std::vector<const BrowseEntry*> matches;
  for (const BrowseEntry& e : entries)
    if (e.name != ".." && e.name.rfind(split.prefix, 0) == 0) matches.push_back(&e);
  if (matches.empty()) return path_input;
  std::string common = matches.front()->name;
  for (const BrowseEntry* e : matches) {
    size_t n = 0;
    while (n < common.size() && n < e->name.size() && common[n] == e->name[n]) ++n;
    common.resize(n);
  }
  const bool folder = matches.size() == 1 && matches.front()->kind != OpenKind::Settings;
  return split.folder + common + (folder ? "/" : "");
}

std::string parentBrowsePath(const std::string& path_input) {
  std::error_code ec;
  std::string path = fs::absolute(path_input.empty() ? "." : path_input, ec).lexically_normal().string();
  if (path.size() > 1 && path.back() == '/') path.pop_back();
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "/" : path.substr(0, slash + 1);
}

}  // namespace attnscope
