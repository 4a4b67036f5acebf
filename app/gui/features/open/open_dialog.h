// Ctrl+O: a browser that opens a bundle (tensors or attention maps), a model folder or a
// settings JSON; first, "On this machine": the models of the Hugging Face cache, Ollama, LM
// Studio and llama.cpp's cache (a click opens one). The path box keeps the keyboard: typing filters the listed folder, Tab
// completes, Up/Down choose an entry, Enter opens it (a plain folder: goes into it), and
// Backspace right after a '/' goes up one folder.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/open_targets.h"
#include "model/local_models.h"

namespace attnscope {

struct AppState;
struct KeyPress;

struct OpenDialogState {
  std::string path_input;        // the path box
  std::string error;             // why the last Open failed ("" = none)
  bool modal_open = false;       // drawn this frame (state log)
  bool was_open = false;         // previous frame, to log the change
  bool close_requested = false;  // Escape: close the dialog
  // The folder the path box points into, listed and filtered by what follows its last '/'.
  std::string listed_for;           // path_input the listing was made for
  std::vector<BrowseEntry> entries;
  OpenKind input_kind = OpenKind::Other;  // what the typed path itself is
  std::vector<std::string> places;  // recent model folders, the shipped models, home, current folder
  std::vector<std::string> place_labels;  // as listed: the folder's name, "shipped models", "home", ...
  std::vector<LocalModel> on_machine;      // "On this machine" (model/local_models.h), listed on opening
  int selected = -1;                // Up/Down's entry; -1 = the typed path
  // A path set by the list (click, Enter on a folder, Backspace up): the active path box
  // takes it in its callback next frame (ImGui keeps its own copy of an active box's text).
  bool replace_pending = false;
  bool select_all = false;          // on opening: typing replaces the preset path
  bool box_active = false;          // the path box had the keyboard last frame
  std::string box_text_before;      // the box's text the frame before (Backspace over '/')
  uint64_t failures_shown = 0;      // compute.load_failures already shown (reopenOnLoadFailure)
};

// Its keys (a hook of the registry): Ctrl+O opens it, Escape closes it while it is open.
bool openDialogKey(AppState& state, const KeyPress& press);
void drawOpenDialog(AppState& state);
// State-log keys: modal_open, open_error, open_browser {input, input_kind, entries [{name,
// kind}], selected, places, on_machine [{name, source, path, format, architecture}]}.
void openDialogToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
