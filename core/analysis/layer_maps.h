// Rollout and flow as maps of the view model (core/view/map_kinds.h: MapKind::Rollout,
// MapKind::Flow): computed by analysis/rollout from every layer's probabilities and added to
// the view with ranges and pooled texture copies, off the UI thread, once per kind.
#pragma once

#include <string>

#include "analysis/map_stack.h"
#include "view/view_model.h"

namespace attnscope {

// Why this view cannot have rollout or flow maps, one line ("" when it can): a single
// layer, or cross-attention (L != S).
std::string acrossLayersUnavailable(const ViewModel& view);

// Adds kind's maps (Rollout or Flow) to view unless it has them. InputError with
// acrossLayersUnavailable's reason; Cancelled when progress returns false (flow; the view
// is then unchanged).
void addAcrossLayerMaps(ViewModel& view, MapKind kind, const Progress& progress = {});

}  // namespace attnscope
