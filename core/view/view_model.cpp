#include "view/view_model.h"

#include <atomic>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <limits>
#include <stdexcept>

#include "view/downsample.h"

namespace attnscope {

namespace {

std::atomic<uint64_t> last_stamp{0};  // the newest stamp handed out (constant-initialized)

}  // namespace

uint64_t ViewStamp::next() { return ++last_stamp; }

namespace {

constexpr float kMasked = -std::numeric_limits<float>::infinity();

// [L][S] labels of batch item b: the per-item rows when given, else the shared row.
std::vector<std::string> labelsOf(const std::vector<std::vector<std::string>>& per_item,
                                  const std::vector<std::string>& shared, size_t b) {
  return b < per_item.size() ? per_item[b] : shared;
}

// "causal+window:3" from the trace's mask components, "none" without any.
std::string maskName(const AttentionTrace& trace) {
  std::string text;
  for (const MaskComponent& component : trace.mask.components) text += (text.empty() ? "" : "+") + component.name;
  return text.empty() ? "none" : text;
}

LayerMaps layerFromTrace(const std::shared_ptr<const AttentionTrace>& trace, std::string name) {
  LayerMaps layer;
  layer.name = std::move(name);
  // Aliasing constructors: the pointers share the trace's lifetime; nothing is copied.
  layer.probs = std::shared_ptr<const float>(trace, trace->probsAfterDropout().data.data());
  layer.scores = std::shared_ptr<const float>(trace, trace->scores.data.data());
  if (!trace->mask.allowed.empty()) layer.allowed = std::shared_ptr<const uint8_t>(trace, trace->mask.allowed.data.data());
  layer.trace = trace;
  layer.scale = trace->scale;
  layer.dropout_applied = trace->dropout_applied;
  layer.mask_name = maskName(*trace);
  return layer;
}

// [L, S] with masked cells -inf: what a texture shows before pooling.
std::vector<float> maskedValues(const float* values, const uint8_t* allowed, int64_t cells) {
  std::vector<float> out(values, values + cells);
  if (allowed)
    for (int64_t c = 0; c < cells; ++c)
      if (!allowed[c]) out[c] = kMasked;
  return out;
}

std::vector<float> maskValues(const uint8_t* allowed, int64_t cells) {
  std::vector<float> out(static_cast<size_t>(cells), 1.0f);
  if (allowed)
    for (int64_t c = 0; c < cells; ++c) out[c] = allowed[c] ? 1.0f : kMasked;
  return out;
}

// The texture of a map larger than kTextureMaxSide: pooled straight from the map and its
// mask (no masked copy: at L = S = 4096 that would be 64 MB of fresh memory per map).
PooledMap poolMap(const MaskedMap& map, MapKind kind, const PooledRowsRead& rows_read = {}) {
  const int64_t out_rows = std::min(map.rows, kTextureMaxSide), out_cols = std::min(map.cols, kTextureMaxSide);
  Tensor pooled = kind == MapKind::Scores ? maxAbsPool2d(map, out_rows, out_cols, rows_read)
                                          : maxPool2d(map, out_rows, out_cols, rows_read);
  return {out_rows, out_cols, std::vector<float>(pooled.data.begin(), pooled.data.end())};
}

// `part` (a range of other cells) merged into `into`.
void mergeRange(MapRange& into, const MapRange& part) {
  if (part.allowed_cells == 0) return;
  into.min = into.allowed_cells > 0 ? std::min(into.min, part.min) : part.min;
  into.max = into.allowed_cells > 0 ? std::max(into.max, part.max) : part.max;
  into.min_positive = std::min(into.min_positive, part.min_positive);
  into.abs_max = std::max(into.abs_max, part.abs_max);
  into.allowed_cells += part.allowed_cells;
}

// A probability map's range over its allowed cells, and (pool) its pooled texture, in one read
// of the map: each block of rows is measured just before it is pooled.
void measureProbs(const MaskedMap& map, bool pool, MapRange& range, PooledMap* pooled) {
  const int64_t S = map.cols;
  if (!pool) {
    range = mapRange(map.values, map.allowed, map.rows * S);
    return;
  }
  range = MapRange{};
  *pooled = poolMap(map, MapKind::Probs, [&](int64_t first, int64_t end) {
    mergeRange(range, mapRange(map.values + first * S, map.allowed ? map.allowed + first * S : nullptr, (end - first) * S));
  });
}

// [L, S] allowed flags as a texture shows them: pooled when larger than kTextureMaxSide.
PooledMap maskTexture(const uint8_t* allowed, int64_t L, int64_t S) {
  if (L <= kTextureMaxSide && S <= kTextureMaxSide) return {L, S, maskValues(allowed, L * S)};
  return poolMap(MaskedMap{nullptr, allowed, L, S, S}, MapKind::Mask);
}

int64_t countAllowed(const uint8_t* allowed, int64_t cells) {
  int64_t count = 0;
  for (int64_t c = 0; c < cells; ++c) count += allowed[c] != 0;
  return count;
}

// Counts and component textures of layer l's mask for batch item b (the UI only uploads them).
void summarizeMask(const ViewModel& view, int64_t l, int64_t b, const uint8_t* allowed, int64_t& allowed_count,
                   int64_t& fully_masked, std::vector<ComponentMap>& parts) {
  const int64_t L = view.L, S = view.S;
  allowed_count = countAllowed(allowed, L * S);
  fully_masked = 0;
  const AttentionTrace* trace = view.maps[l].trace.get();
  if (!trace) {  // imported padding: rows with no allowed key
    for (int64_t i = 0; i < L; ++i) fully_masked += countAllowed(allowed + i * S, S) == 0;
    return;
  }
  if (trace->fully_masked.shape == Shape{view.B, L})
    for (int64_t i = 0; i < L; ++i) fully_masked += trace->fully_masked.data[b * L + i] != 0;  // [B, L]
  for (const MaskComponent& component : trace->mask.components) {
    ComponentMap& map = parts.emplace_back();
    map.name = component.name;
    if (component.allowed.shape != Shape{view.B, L, S}) continue;  // hand-made traces: name only
    const uint8_t* part = component.allowed.data.data() + b * L * S;  // [L, S]
    map.map = maskTexture(part, L, S);
    map.allowed_cells = countAllowed(part, L * S);
  }
}

// Ranges and (for large maps) pooled textures of the probabilities, [layers, B, H], and the mask
// summaries, [layers, B]: each map is read in place, maps in parallel.
void summarize(ViewModel& view) {
  const bool pool = view.pooled();
  bool mask = false;  // any layer's
  for (const LayerMaps& layer : view.maps) mask = mask || layer.allowed != nullptr;
  const int64_t maps = view.layers * view.B * view.H, items = view.layers * view.B;
  view.probs_ranges.assign(static_cast<size_t>(maps), MapRange{});
  if (pool) {
    view.pooled_probs.assign(static_cast<size_t>(maps), PooledMap{});
    view.pooled_mask.assign(static_cast<size_t>(items), PooledMap{});
  }
  if (mask) {
    view.allowed_counts.assign(static_cast<size_t>(items), 0);
    view.fully_masked_counts.assign(static_cast<size_t>(items), 0);
    view.component_maps.assign(static_cast<size_t>(items), {});
  }
  // One work item per probability map (layer, b, h), then one per mask of (layer, b).
  const int64_t work = maps + items;
#pragma omp parallel for schedule(dynamic)
  for (int64_t n = 0; n < work; ++n) {
    if (n < maps) {
      const int64_t l = n / (view.B * view.H), b = n / view.H % view.B, h = n % view.H;
      measureProbs(MaskedMap{view.probs(l, b, h), view.allowed(l, b), view.L, view.S, view.S}, pool,
                 view.probs_ranges[n], pool ? &view.pooled_probs[n] : nullptr);
      continue;
    }
    const int64_t item = n - maps, l = item / view.B, b = item % view.B;
    const uint8_t* allowed = view.allowed(l, b);
    if (pool) view.pooled_mask[item] = poolMap(MaskedMap{nullptr, allowed, view.L, view.S, view.S}, MapKind::Mask);
    if (allowed)
      summarizeMask(view, l, b, allowed, view.allowed_counts[item], view.fully_masked_counts[item],
                    view.component_maps[item]);
  }
}

// Counts rows [L] of every [layer, b, h] that are not distributions; one warning line.
void warnNonDistributions(ViewModel& view, const std::string& origin) {
  int64_t bad_rows = 0, first_l = 0, first_b = 0, first_h = 0, first_i = 0;
  double first_sum = 0.0;
  float first_min = 0.0f;
  for (int64_t l = 0; l < view.layers; ++l)
    for (int64_t b = 0; b < view.B; ++b)
      for (int64_t h = 0; h < view.H; ++h) {
        const float* map = view.probs(l, b, h);  // [L, S]
        for (int64_t i = 0; i < view.L; ++i) {
          const float* row = map + i * view.S;
          double sum = 0.0;
          float low = INFINITY;
          for (int64_t j = 0; j < view.S; ++j) sum += row[j], low = std::min(low, row[j]);
          if (low >= 0.0f && std::fabs(sum - 1.0) <= 1e-3) continue;
          if (bad_rows++ == 0) first_l = l, first_b = b, first_h = h, first_i = i, first_sum = sum, first_min = low;
        }
      }
  if (bad_rows == 0) return;
  char text[512];
  std::snprintf(text, sizeof text,
                "%s: %lld of %lld rows are not probability distributions (negative or not summing to 1 "
                "within 1e-3), first [%lld, %lld, %lld, %lld]: sum %.6g, min %.6g",
                origin.c_str(), static_cast<long long>(bad_rows),
                static_cast<long long>(view.layers * view.B * view.H * view.L), static_cast<long long>(first_l),
                static_cast<long long>(first_b), static_cast<long long>(first_h), static_cast<long long>(first_i),
                first_sum, static_cast<double>(first_min));
  view.warnings.push_back(text);
}

// [B][n] entries from per-item rows or one shared row (rows not empty).
template <typename Entry>
std::vector<std::vector<Entry>> expandRows(const std::vector<std::vector<Entry>>& rows, int64_t B, int64_t n,
                                           const char* what, const std::string& origin) {
  if (rows.size() != 1 && static_cast<int64_t>(rows.size()) != B)
    throw InputError(origin + ": " + std::to_string(rows.size()) + " rows of " + what + " for B=" +
                     std::to_string(B) + " batch items (give one row, or one per item)");
  for (const auto& row : rows)
    if (static_cast<int64_t>(row.size()) != n)
      throw InputError(origin + ": " + std::to_string(row.size()) + " " + what + " but the maps have " +
                       std::to_string(n));
  return rows.size() == 1 ? std::vector<std::vector<Entry>>(B, rows[0]) : rows;
}

// [B][n] labels from per-item rows, one shared row, or none ("0".."n-1").
std::vector<std::vector<std::string>> expandLabels(const std::vector<std::vector<std::string>>& rows, int64_t B,
                                                   int64_t n, const char* what, const std::string& origin) {
  if (!rows.empty()) return expandRows(rows, B, n, what, origin);
  std::vector<std::string> indices;
  for (int64_t i = 0; i < n; ++i) indices.push_back(std::to_string(i));
  return std::vector<std::vector<std::string>>(B, indices);
}

// Imported padding: one [B, L, S] mask shared by every layer.
void attachImportedMask(ViewModel& view, std::vector<uint8_t> allowed, const std::string& origin) {
  if (allowed.empty()) return;
  if (static_cast<int64_t>(allowed.size()) != view.B * view.L * view.S)
    throw InputError(origin + ": a mask of " + std::to_string(allowed.size()) + " cells for B=" +
                     std::to_string(view.B) + " L=" + std::to_string(view.L) + " S=" + std::to_string(view.S));
  const auto owner = std::make_shared<const std::vector<uint8_t>>(std::move(allowed));
  for (LayerMaps& layer : view.maps) {
    layer.allowed = std::shared_ptr<const uint8_t>(owner, owner->data());
    layer.mask_name = "padding";
  }
}

}  // namespace

std::string HeadNote::text() const {
  char value[32];
  std::snprintf(value, sizeof value, "%.2f", score);
  return "L" + std::to_string(layer) + "H" + std::to_string(head) + " " + pattern + " " + value;
}

const char* viewSourceName(ViewSource source) {
  switch (source) {
    case ViewSource::CoreTrace: return "core trace";
    case ViewSource::ModelRun: return "model run";
    case ViewSource::Imported: return "imported";
    case ViewSource::Tiled: return "tiled";
  }
  return "core trace";
}

const char* layerPositionsName(LayerPositions positions) {
  constexpr const char* kNames[] = {"added", "rope", "nope"};  // in LayerPositions' order
  return kNames[static_cast<int>(positions)];
}

const char* qkNormName(QkNorm norm) {
  constexpr const char* kNames[] = {"none", "per_head", "whole_projection"};  // in QkNorm's order
  return kNames[static_cast<int>(norm)];
}

size_t ViewModel::mapIndex(int64_t layer, int64_t b, int64_t h) const {
  if (layer < 0 || layer >= layers || b < 0 || b >= B || h < 0 || h >= H)
    throw std::out_of_range("view model: map [" + std::to_string(layer) + ", " + std::to_string(b) + ", " +
                            std::to_string(h) + "] outside [" + std::to_string(layers) + ", " + std::to_string(B) +
                            ", " + std::to_string(H) + "]");
  return static_cast<size_t>((layer * B + b) * H + h);
}

bool ViewModel::knockedOut(int64_t layer, int64_t head, int64_t query, int64_t key) const {
  return std::any_of(knocked_cells.begin(), knocked_cells.end(), [&](const KnockedCell& c) {
    return c.layer == layer && (c.head < 0 || c.head == head) && c.query == query && c.key == key;
  });
}

const float* ViewModel::probs(int64_t layer, int64_t b, int64_t h) const {
  mapIndex(layer, b, h);
  return maps[layer].probs.get() + (b * H + h) * L * S;
}

const float* ViewModel::scores(int64_t layer, int64_t b, int64_t h) const {
  mapIndex(layer, b, h);
  const auto& scores = maps[layer].scores;
  return scores ? scores.get() + (b * H + h) * L * S : nullptr;
}

const uint8_t* ViewModel::allowed(int64_t layer, int64_t b) const {
  mapIndex(layer, b, 0);
  const auto& allowed = maps[layer].allowed;
  return allowed ? allowed.get() + b * L * S : nullptr;
}

bool ViewModel::isAllowed(int64_t layer, int64_t b, int64_t i, int64_t j) const {
  const uint8_t* mask = allowed(layer, b);
  return !mask || mask[i * S + j] != 0;
}

const MapRange& ViewModel::probsRange(int64_t layer, int64_t b, int64_t h) const {
  return probs_ranges.at(mapIndex(layer, b, h));
}

MapRange ViewModel::scoresRange(int64_t layer, int64_t b, int64_t h) const {
  const float* values = scores(layer, b, h);
  if (!values) throw std::logic_error("scoresRange: the view has no scores");
  return mapRange(values, allowed(layer, b), L * S);
}

MapRange ViewModel::probsRangeOver(int64_t b, const std::vector<int64_t>& chosen) const {
  std::vector<int64_t> all;
  for (int64_t l = 0; l < layers; ++l) all.push_back(l);
  MapRange total;
  for (int64_t l : chosen.empty() ? all : chosen)
    for (int64_t h = 0; h < H; ++h) mergeRange(total, probsRange(l, b, h));
  return total;
}

const float* AcrossLayerMaps::map(int64_t layer, int64_t b) const {
  const int64_t layers = values.shape.at(0), B = values.shape.at(1), L = values.shape.at(2);
  if (layer < 0 || layer >= layers || b < 0 || b >= B) throw std::out_of_range("across-layer map index out of range");
  return values.data.data() + (layer * B + b) * L * L;
}

const AcrossLayerMaps* ViewModel::acrossLayers(MapKind kind) const {
  for (const auto& maps : across_layers)
    if (maps->kind == kind) return maps.get();
  return nullptr;
}

PooledMap ViewModel::textureMap(MapKind kind, int64_t layer, int64_t b, int64_t h) const {
  if (mapKindInfo(kind).across_layers) {
    const AcrossLayerMaps* maps = acrossLayers(kind);
    if (!maps) throw std::logic_error(std::string("view model: no ") + mapKindName(kind) + " maps built");
    const float* values = maps->map(layer, b);
    if (!maps->pooled.empty()) return maps->pooled[static_cast<size_t>(layer * B + b)];
    return {L, L, std::vector<float>(values, values + L * L)};
  }
  const size_t index = mapIndex(layer, b, kind == MapKind::Mask ? 0 : h);
  if (kind == MapKind::Scores && !hasScores()) throw std::logic_error("view model: no scores in this source");
  if (pooled()) {
    if (kind == MapKind::Probs) return pooled_probs[index];
    if (kind == MapKind::Scores) return poolMap(MaskedMap{scores(layer, b, h), allowed(layer, b), L, S, S}, kind);
    return pooled_mask[static_cast<size_t>(layer * B + b)];
  }
  const int64_t cells = L * S;
  const uint8_t* mask = allowed(layer, b);
  if (kind == MapKind::Mask) return {L, S, maskValues(mask, cells)};
  return {L, S, maskedValues(kind == MapKind::Probs ? probs(layer, b, h) : scores(layer, b, h), mask, cells)};
}

PooledMap ViewModel::windowMap(MapKind kind, int64_t layer, int64_t b, int64_t h, const CellWindow& window) const {
  const CellWindow w = resolveWindow(window, L, S);
  if (w.row0 < 0 || w.rows < 1 || w.row0 + w.rows > L || w.col0 < 0 || w.cols < 1 || w.col0 + w.cols > S)
    throw InputError("window rows [" + std::to_string(w.row0) + ", " + std::to_string(w.row0 + w.rows) + ") x keys [" +
                     std::to_string(w.col0) + ", " + std::to_string(w.col0 + w.cols) + ") is outside the [" +
                     std::to_string(L) + ", " + std::to_string(S) + "] map");
  mapIndex(layer, b, kind == MapKind::Mask ? 0 : h);
  if (kind == MapKind::Scores && !hasScores()) throw std::logic_error("view model: no scores in this source");
  const float* values = kind == MapKind::Probs ? probs(layer, b, h) : kind == MapKind::Scores ? scores(layer, b, h) : nullptr;
  const uint8_t* mask = allowed(layer, b);
  const int64_t first = w.row0 * S + w.col0;
  if (w.rows > kTextureMaxSide || w.cols > kTextureMaxSide)
    return poolMap(MaskedMap{values ? values + first : nullptr, mask ? mask + first : nullptr, w.rows, w.cols, S}, kind);
  // [w.rows, w.cols]: the window's cells, masked -inf (the mask: 1 allowed).
  std::vector<float> cells(static_cast<size_t>(w.rows * w.cols));
  for (int64_t r = 0; r < w.rows; ++r) {
    const size_t from = static_cast<size_t>((w.row0 + r) * S + w.col0);
    float* out = &cells[static_cast<size_t>(r * w.cols)];
    for (int64_t c = 0; c < w.cols; ++c) {
      const bool ok = !mask || mask[from + c] != 0;
      out[c] = !ok ? kMasked : values ? values[from + c] : 1.0f;
    }
  }
  return {w.rows, w.cols, std::move(cells)};
}

PooledMap textureOfMap(const float* values, const uint8_t* allowed, int64_t rows, int64_t cols, MapKind kind) {
  if (rows <= kTextureMaxSide && cols <= kTextureMaxSide) return {rows, cols, maskedValues(values, allowed, rows * cols)};
  return poolMap(MaskedMap{values, allowed, rows, cols, cols}, kind);
}

ViewModel viewFromTrace(std::shared_ptr<const AttentionTrace> trace) {
  if (!trace) throw InputError("view model: no trace");
  ViewModel view = viewFromTraces({trace}, {"layer 0"}, ViewSource::CoreTrace);
  view.trace = std::move(trace);
  return view;
}

ViewModel viewFromTraces(const std::vector<std::shared_ptr<const AttentionTrace>>& traces,
                         std::vector<std::string> layer_names, ViewSource source) {
  if (traces.empty()) throw InputError("view model: no layers");
  if (!layer_names.empty() && layer_names.size() != traces.size())
    throw InputError("view model: " + std::to_string(layer_names.size()) + " layer names for " +
                     std::to_string(traces.size()) + " layers");
  ViewModel view;
  view.source = source;
  const AttentionTrace& first = *traces.at(0);
  view.layers = static_cast<int64_t>(traces.size());
  view.B = first.B, view.H = first.H, view.L = first.L, view.S = first.S;
  for (size_t l = 0; l < traces.size(); ++l) {
    const auto& trace = traces[l];
    if (!trace) throw InputError("view model: layer " + std::to_string(l) + " has no trace");
    if (trace->B != view.B || trace->H != view.H || trace->L != view.L || trace->S != view.S)
      throw InputError("view model: layer " + std::to_string(l) + " has B=" + std::to_string(trace->B) +
                       " H=" + std::to_string(trace->H) + " L=" + std::to_string(trace->L) + " S=" +
                       std::to_string(trace->S) + ", layer 0 has B=" + std::to_string(view.B) + " H=" +
                       std::to_string(view.H) + " L=" + std::to_string(view.L) + " S=" + std::to_string(view.S));
    view.maps.push_back(layerFromTrace(trace, layer_names.empty() ? "layer " + std::to_string(l) : layer_names[l]));
  }
  for (int64_t b = 0; b < view.B; ++b) {
    view.query_tokens.push_back(labelsOf(first.batch_query_tokens, first.query_tokens, static_cast<size_t>(b)));
    view.key_tokens.push_back(labelsOf(first.batch_key_tokens, first.key_tokens, static_cast<size_t>(b)));
  }
  summarize(view);
  return view;
}

ViewModel viewFromImported(ImportedMaps imported) {
  const std::string& origin = imported.origin;
  const Shape& shape = imported.maps.shape;
  if (shape.size() != 5 || numel(shape) == 0)
    throw InputError(origin + ": expected [layers, B, H, L, S] with no empty axis, got " + shapeToString(shape));
  ViewModel view;
  view.source = ViewSource::Imported;
  view.layers = shape[0], view.B = shape[1], view.H = shape[2], view.L = shape[3], view.S = shape[4];
  if (!imported.layer_names.empty() && static_cast<int64_t>(imported.layer_names.size()) != view.layers)
    throw InputError(origin + ": " + std::to_string(imported.layer_names.size()) + " layer names for " +
                     std::to_string(view.layers) + " layers");
  // One owner for every layer; each layer's pointer aliases its [B, H, L, S] block.
  const auto owner = std::make_shared<const Tensor>(std::move(imported.maps));
  const int64_t layer_size = view.B * view.H * view.L * view.S;
  for (int64_t l = 0; l < view.layers; ++l) {
    LayerMaps layer;
    layer.name = imported.layer_names.empty() ? "layer " + std::to_string(l) : imported.layer_names[l];
    layer.probs = std::shared_ptr<const float>(owner, owner->data.data() + l * layer_size);
    view.maps.push_back(std::move(layer));
  }
  view.query_tokens = expandLabels(imported.query_tokens, view.B, view.L, "query tokens", origin);
  view.key_tokens = imported.key_tokens.empty() && view.S == view.L
                        ? view.query_tokens
                        : expandLabels(imported.key_tokens, view.B, view.S, "key tokens", origin);
  if (!imported.query_pieces.empty())
    view.query_pieces = expandRows(imported.query_pieces, view.B, view.L, "query pieces", origin);
  if (!imported.key_pieces.empty())
    view.key_pieces = expandRows(imported.key_pieces, view.B, view.S, "key pieces", origin);
  else if (view.S == view.L)
    view.key_pieces = view.query_pieces;
  attachImportedMask(view, std::move(imported.allowed), origin);
  view.model = std::move(imported.model);
  view.notes = std::move(imported.notes);
  view.first_generated = imported.first_generated;
  view.predictions = std::move(imported.predictions);
  view.generated_text = std::move(imported.generated_text);
  summarize(view);
  warnNonDistributions(view, origin);
  return view;
}

ViewModel viewFromOverview(std::shared_ptr<const TiledAttention> attention, Overview overview,
                           std::vector<std::vector<std::string>> query_tokens,
                           std::vector<std::vector<std::string>> key_tokens) {
  std::vector<Overview> overviews;
  overviews.push_back(std::move(overview));
  return viewFromOverviews({std::move(attention)}, std::move(overviews), std::move(query_tokens),
                           std::move(key_tokens));
}

namespace {

// "causal+window:3", or "none" without terms.
std::string tiledMaskName(const TiledAttention& t) {
  std::string name;
  for (const std::string& term : t.mask_names) name += (name.empty() ? "" : "+") + term;
  return name.empty() ? "none" : name;
}

// InputError unless every layer's attention and overview agree with the first's sizes.
void checkOverviews(const std::vector<std::shared_ptr<const TiledAttention>>& layers, const std::vector<Overview>& overviews,
                    size_t query_items, size_t key_items) {
  if (layers.empty() || layers.size() != overviews.size() || !layers[0]) throw InputError("view model: no tiled attention");
  const TiledAttention& first = *layers[0];
  for (size_t l = 0; l < layers.size(); ++l) {
    const TiledAttention* t = layers[l].get();
    const Overview& o = overviews[l];
    if (!t || t->B != first.B || t->H != first.H || t->L != first.L || t->S != first.S ||
        o.probs.shape != Shape{first.B, first.H, overviews[0].rows, overviews[0].cols} ||
        o.metric_sums.size() != overviews[0].metric_sums.size() || o.block_means.size() != overviews[0].block_means.size() ||
        static_cast<int64_t>(query_items) != first.B || static_cast<int64_t>(key_items) != first.B)
      throw InputError("view model: overview " + shapeToString(o.probs.shape) + " of layer " + std::to_string(l) +
                       " does not match B=" + std::to_string(first.B) + " H=" + std::to_string(first.H));
  }
}

// Overview row r covers real rows [firstRow(r), firstRow(r + 1)): labelled "first-last".
std::vector<std::string> rangeLabels(int64_t count, const std::function<int64_t(int64_t)>& first) {
  std::vector<std::string> labels;
  for (int64_t n = 0; n < count; ++n) {
    const int64_t a = first(n), b = first(n + 1) - 1;
    labels.push_back(a == b ? std::to_string(a) : std::to_string(a) + "-" + std::to_string(b));
  }
  return labels;
}

}  // namespace

ViewModel viewFromOverviews(std::vector<std::shared_ptr<const TiledAttention>> layers, std::vector<Overview> overviews,
                            std::vector<std::vector<std::string>> query_tokens,
                            std::vector<std::vector<std::string>> key_tokens) {
  checkOverviews(layers, overviews, query_tokens.size(), key_tokens.size());
  const TiledAttention& t = *layers[0];
  auto tiled = std::make_shared<TiledMaps>();
  tiled->L = t.L, tiled->S = t.S, tiled->rows = overviews[0].rows, tiled->cols = overviews[0].cols;
  tiled->query_tokens = std::move(query_tokens);
  tiled->key_tokens = std::move(key_tokens);
  tiled->fully_masked = overviews[0].fully_masked;
  tiled->mean_rows = overviews[0].mean_rows, tiled->mean_cols = overviews[0].mean_cols;

  ViewModel view;
  view.source = ViewSource::Tiled;
  view.layers = static_cast<int64_t>(layers.size()), view.B = t.B, view.H = t.H;
  view.L = tiled->rows, view.S = tiled->cols;
  std::vector<std::vector<int64_t>> allowed_cells;  // [layers][B]
  for (size_t l = 0; l < layers.size(); ++l) {
    Overview& overview = overviews[l];
    tiled->metric_sums.insert(tiled->metric_sums.end(), overview.metric_sums.begin(), overview.metric_sums.end());
    tiled->block_means.insert(tiled->block_means.end(), overview.block_means.begin(), overview.block_means.end());
    allowed_cells.push_back(std::move(overview.allowed_cells));
    const auto owner = std::make_shared<const Overview>(std::move(overview));
    LayerMaps layer;
    layer.name = "layer " + std::to_string(l);
    layer.probs = std::shared_ptr<const float>(owner, owner->probs.data.data());
    layer.scores = std::shared_ptr<const float>(owner, owner->scores.data.data());
    layer.allowed = std::shared_ptr<const uint8_t>(owner, owner->allowed.data.data());
    layer.scale = layers[l]->scale;
    layer.mask_name = tiledMaskName(*layers[l]);
    view.maps.push_back(std::move(layer));
  }
  tiled->layers = std::move(layers);
  const TiledMaps& m = *tiled;
  view.query_tokens.assign(static_cast<size_t>(t.B), rangeLabels(m.rows, [&](int64_t r) { return m.firstRow(r); }));
  view.key_tokens.assign(static_cast<size_t>(t.B), rangeLabels(m.cols, [&](int64_t c) { return m.firstCol(c); }));
  view.tiled = std::move(tiled);
  summarize(view);
  // Fully masked rows of the real map (summarize counts them from a trace, which tiles lack)
  // and its allowed cells when the overview counted them (summarize counted blocks).
  for (int64_t l = 0; l < view.layers; ++l)
    for (int64_t b = 0; b < view.B; ++b) {
      int64_t count = 0;
      for (int64_t i = 0; i < view.tiled->L; ++i) count += view.tiled->fully_masked.data[b * view.tiled->L + i] != 0;
      const size_t slot = static_cast<size_t>(l * view.B + b);
      view.fully_masked_counts[slot] = count;
      if (!allowed_cells[l].empty()) view.allowed_counts[slot] = allowed_cells[l][b];
    }
  return view;
}

}  // namespace attnscope
