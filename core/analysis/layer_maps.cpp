#include "analysis/layer_maps.h"

#include <memory>
#include <stdexcept>
#include <utility>

#include "analysis/rollout.h"

namespace attnscope {

std::string acrossLayersUnavailable(const ViewModel& view) {
  if (view.tiled)
    return "rollout and flow need every layer's full maps; these are past the full path's budget, shown in tiles";
  if (view.layers < 2)
    return "rollout and flow combine several layers; this source has " + std::to_string(view.layers) + " layer";
  if (view.L != view.S)
    return "rollout and flow need self-attention (L = S); these maps are L = " + std::to_string(view.L) +
           " x S = " + std::to_string(view.S);
  return "";
}

void addAcrossLayerMaps(ViewModel& view, MapKind kind, const Progress& progress) {
  if (!mapKindInfo(kind).across_layers) throw std::logic_error("addAcrossLayerMaps: not an across-layer kind");
  if (view.acrossLayers(kind)) return;
  const std::string why = acrossLayersUnavailable(view);
  if (!why.empty()) throw InputError(why);
  auto maps = std::make_shared<AcrossLayerMaps>();
  maps->kind = kind;
  const MapStack stack = mapStackOf(view);
  maps->values = kind == MapKind::Rollout ? attentionRollout(stack) : attentionFlow(stack, progress);
  const bool pool = view.L > kTextureMaxSide;
  for (int64_t layer = 0; layer < view.layers; ++layer)
    for (int64_t b = 0; b < view.B; ++b) {
      const float* map = maps->map(layer, b);  // [L, L]
      maps->ranges.push_back(mapRange(map, nullptr, view.L * view.L));
      if (pool) maps->pooled.push_back(textureOfMap(map, nullptr, view.L, view.L, kind));
    }
  view.across_layers.push_back(std::move(maps));
}

}  // namespace attnscope
