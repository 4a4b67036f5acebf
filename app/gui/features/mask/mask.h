// The mask panel: the combined allowed/blocked mask [L, S] of the focused layer and batch
// item, and each part.
#pragma once

#include <nlohmann/json.hpp>

namespace attnscope {

struct AppState;

void drawMaskPanel(AppState& state);
// State-log keys: allowed_cells, fully_masked_rows (the focused layer and batch item),
// allowed_cells_by_item ([B], the focused layer); texts: pad_note.
void maskToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
