#include "view/map_kinds.h"

#include <iterator>
#include <stdexcept>

namespace attnscope {

namespace {

constexpr MapKindInfo kKinds[] = {
    {MapKind::Probs, "probs", "probabilities", "probability", true, false, true},
    {MapKind::Scores, "scores", "scores", "score", true, false, true},
    {MapKind::Mask, "mask", "mask", "1 = may attend, blocked = grey", false, false, false},
    {MapKind::Rollout, "rollout", "rollout", "share of the input token", false, true, true},
    {MapKind::Flow, "flow", "flow", "share of the input token (max flow)", false, true, true},
};

}  // namespace

std::vector<MapKindInfo> mapKinds() { return {std::begin(kKinds), std::end(kKinds)}; }

const MapKindInfo& mapKindInfo(MapKind kind) {
  for (const MapKindInfo& info : kKinds)
    if (info.kind == kind) return info;
  throw std::logic_error("map kind without a registry row");
}

const char* mapKindName(MapKind kind) { return mapKindInfo(kind).name; }

const NameTable<MapKind>& mapKindNames() {
  static const NameTable<MapKind> table("map kind", kKinds, &MapKindInfo::kind, &MapKindInfo::name);
  return table;
}

std::string acrossLayersTitle(MapKind kind, const std::string& layer_name) {
  return std::string(mapKindInfo(kind).label) + " after " + layer_name + ": output position x input token";
}

}  // namespace attnscope
