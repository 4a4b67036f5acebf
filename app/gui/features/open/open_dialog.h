// Ctrl+O: the dialog that opens a bundle (tensors or attention maps) or a model folder.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace attnscope {

struct AppState;

struct OpenDialogState {
  bool requested = false;        // Ctrl+O or a button: open the dialog next frame
  std::string path_input;
  std::string error;             // why the last Open failed ("" = none)
  bool modal_open = false;       // drawn this frame (state log)
  bool was_open = false;         // previous frame, to log the change
  bool close_requested = false;  // Escape: close the dialog
};

void drawOpenDialog(AppState& state);
// State-log keys: modal_open, open_error.
void openDialogToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
