// What the open dialog (Ctrl+O) opens, recognised by what a path holds, and the
// listing of a folder the open dialog browses: no graphics, no reading beyond the names
// (and a .json file of at most 64 KB, to tell a settings file).
#pragma once

#include <string>
#include <vector>

namespace attnscope {

enum class OpenKind {
  Folder,           // a plain folder: browsed into, not opened
  Model,            // config.json: a model folder (attnscope-model/1 or Hugging Face)
  TensorBundle,     // query.npy (+ key, value, weights, masks)
  AttentionBundle,  // attentions.npy / attentions.npz
  Settings,         // a settings JSON (at most 64 KB, its top level has "source"), e.g. one beside a figure
  Other,            // anything else (not listed)
};
// The row of a kind: its label in the dialog ("model", "bundle", ...; "" for a folder).
const char* openKindLabel(OpenKind kind);
// Openable = not a plain folder, not Other.
bool opensDirectly(OpenKind kind);
// What `path` is (Other when it does not exist). A model folder wins over bundle files.
OpenKind openKind(const std::string& path);

struct BrowseEntry {
  std::string name;  // file or folder name; ".." for the parent
  OpenKind kind = OpenKind::Folder;
};

// What the dialog lists of `path_input`: the folder part (up to and with the last '/'),
// and the rest, typed so far, that the names are filtered by.
struct BrowsePath {
  std::string folder;  // "" when the input has no '/': the current folder
  std::string prefix;
};
BrowsePath splitBrowsePath(const std::string& path_input);

// The folder's entries that attnscope opens or that hold more (folders), ".." first (unless
// at the root), then folders, then files, each by name; hidden names only when the prefix
// starts with '.'; names that do not start with `prefix` left out; at most `limit` entries.
// An unreadable folder gives just "..".
std::vector<BrowseEntry> listBrowseFolder(const std::string& folder, const std::string& prefix, size_t limit = 2000);

// Tab: the input completed as far as the listed names agree (".." aside); a single folder
// gets its trailing '/'. Unchanged when nothing matches.
std::string completeBrowsePath(const std::string& path_input, const std::vector<BrowseEntry>& entries);

// The input that goes one folder up, as an absolute path: "/a/b/" and "/a/b" -> "/a/";
// "/" stays "/"; a relative input is taken from the current folder.
std::string parentBrowsePath(const std::string& path_input);

}  // namespace attnscope
