// The mask panel: the combined allowed/blocked mask [L, S] of the focused layer and batch
// item, and each part.
#pragma once

#include <nlohmann/json.hpp>

namespace attnscope {

struct AppState;
struct ColumnSpace;

// Its height in the right column, below the predictions (space.above: theirs, 0 when not
// shown): the dragged panel_sizes.mask, else 30% (36% without predictions).
float maskHeight(const AppState& state, const ColumnSpace& space);
void drawMaskPanel(AppState& state);
// State-log keys: allowed_cells, fully_masked_rows (the focused layer and batch item),
// allowed_cells_by_item ([B], the focused layer); texts: pad_note.
void maskToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
