// The kinds of map a view can show, one row each: the per-head maps of one layer
// (probabilities, scores), the layer's mask, and the maps across layers (attention rollout
// and flow, analysis/layer_maps.h). Choosers, export names, titles and availability all
// read this table.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "registry/name_table.h"

namespace attnscope {

enum class MapKind { Probs, Scores, Mask, Rollout, Flow };

struct MapKindInfo {
  MapKind kind;
  const char* name;         // "probs", "rollout": export --what, file names, state log
  const char* label;        // chooser text: "probabilities", "rollout"
  const char* value_label;  // colour bar caption
  bool per_head;            // one map per (layer, batch item, head); else per (layer, batch item)
  bool across_layers;       // combines the layers up to its own (needs several, L == S)
  bool chooser;             // offered in the app's map kind chooser (the mask has its own panel)
};

std::vector<MapKindInfo> mapKinds();  // every kind, in chooser order
const MapKindInfo& mapKindInfo(MapKind kind);
const char* mapKindName(MapKind kind);                          // mapKindInfo(kind).name
const NameTable<MapKind>& mapKindNames();                       // "probs", "scores", ...

// "rollout after layer 3: output position x input token" (layer as the source names it).
std::string acrossLayersTitle(MapKind kind, const std::string& layer_name);

}  // namespace attnscope
