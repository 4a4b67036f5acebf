// The head grid: every (layer, head) map of the batch item as small multiples.
#pragma once

#include <nlohmann/json.hpp>

namespace attnscope {

struct AppState;

void drawHeadGridPanel(AppState& state);
// State-log keys: grid_columns.
void headGridToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
