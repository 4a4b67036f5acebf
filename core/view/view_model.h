// The view model: what every panel, texture, figure and analysis reads, whatever made the
// attention. Maps are [layers, B, H, L, S]: one entry per layer, each a [B, H, L, S]
// row-major block held by an aliasing shared_ptr into its owner (a core trace's tensor, or
// the one imported [layers, B, H, L, S] array), so nothing is copied.
//
// Sources: the attention core's trace (one layer), a transformer model run (one trace per
// layer) and imported maps (attentions.npy / .npz: probabilities only). Built once per
// result, off the UI thread; read-only afterwards (share it as shared_ptr<const ViewModel>).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attention/attention.h"
#include "attention/tiles.h"
#include "tensor/tensor.h"
#include "view/map_kinds.h"
#include "view/zoom.h"

namespace attnscope {

enum class ViewSource {
  CoreTrace,  // one runAttention() trace: probabilities, scores, mask, pipeline stages
  ModelRun,   // a transformer run: one trace per layer (past the full path's budget: in tiles, `tiled` set)
  Imported,   // maps computed elsewhere: probabilities only
  Tiled,      // a map too large to hold (attention/tiles.h): its pooled overview, exact windows on demand
};
const char* viewSourceName(ViewSource source);  // "core trace", "model run", "imported", "tiled"

// A tiled source behind a ViewModel: the view's maps are its overviews ([B, H, rows, cols]
// per layer, each cell a block of the real [L, S] map, view/downsample.h's block rule), and
// the focus view's zoom computes exact or pooled windows of the real map from `layers`: one
// layer for a synthetic run, every layer of a model run beyond the full path's budget.
struct TiledMaps {
  std::vector<std::shared_ptr<const TiledAttention>> layers;  // [layers]
  int64_t L = 0, S = 0;                                // the real map
  int64_t rows = 0, cols = 0;                          // the overview
  std::vector<std::vector<std::string>> query_tokens;  // [B][L]
  std::vector<std::vector<std::string>> key_tokens;    // [B][S]
  BoolTensor fully_masked;                             // [B, L] of layer 0 (a model's layers: none)
  // Head analytics of the real maps, measured in the overview's pass (OverviewMeasures);
  // empty when not measured. The view's allowed_counts are the real map's cells too.
  std::vector<MetricSums> metric_sums;  // [layers, B, H]
  int64_t mean_rows = 0, mean_cols = 0;
  std::vector<double> block_means;      // [layers, B, H, mean_rows, mean_cols] block means of the probabilities
  const TiledAttention& layer(int64_t l) const { return *layers.at(static_cast<size_t>(l)); }
  // The overview cell holding real query row i / key j, and the first real row / key of
  // overview row r / column c (r = rows gives L).
  int64_t overviewRow(int64_t i) const { return ((i + 1) * rows - 1) / L; }
  int64_t overviewCol(int64_t j) const { return ((j + 1) * cols - 1) / S; }
  int64_t firstRow(int64_t r) const { return r * L / rows; }
  int64_t firstCol(int64_t c) const { return c * S / cols; }
};

// What one layer of a model run computes besides its maps, as its model's config says (the
// pipeline panel's stages and the greyed sandbox controls read it; model/model.h layerFacts).
enum class LayerPositions {
  Added,  // learned or sinusoidal positions added to the embeddings (GPT-2, BERT, attnscope-model/1)
  Rope,   // rotary positions on q and k
  NoPe,   // a RoPE model's layer without positions (SmolLM3's no_rope_layers)
};
enum class QkNorm {
  None,
  PerHead,          // RMSNorm over each head's d features of q and k (Qwen3, Gemma 3)
  WholeProjection,  // RMSNorm over each position's whole q [H*d] and k [G*d] projection (OLMo 2)
};
struct LayerFacts {
  int64_t heads = 0, kv_heads = 0, head_dim = 0, width = 0;  // H, G, d (config head_dim), hidden D
  bool own_head_dim = false;  // d is config.json's head_dim, not width / H (Qwen3, Gemma)
  int64_t window = -1;  // causal window W (a query sees itself and W keys before), -1 = global
  int64_t sliding_window = 0;  // config.json's sliding_window on this layer (W + 1), 0 = global
  LayerPositions positions = LayerPositions::Added;
  double rope_base = 0.0;            // RoPE only: the layer's base (theta)
  int64_t rotary_dims = 0;           // RoPE only: features of each head that rotate (< d: partial)
  std::string rope_type;             // RoPE only: "default", "linear", "llama3", "longrope"
  double rope_attention_factor = 1.0;  // RoPE only: cos and sin times this (longrope)
  QkNorm qk_norm = QkNorm::None;
  std::optional<double> softcap;     // attention logit soft-cap
  double scale = 0.0;                // scores * scale
};
const char* layerPositionsName(LayerPositions positions);  // "added", "rope", "nope"
const char* qkNormName(QkNorm norm);                       // "none", "per_head", "whole_projection"

// One layer. probs is always set; scores and allowed where the source has them.
struct LayerMaps {
  std::string name;                             // "layer 0", or the source's own name
  std::shared_ptr<const float> probs;           // [B, H, L, S] shown probabilities (after dropout when it ran)
  std::shared_ptr<const float> scores;          // [B, H, L, S] scaled scores, masked = fill; null = none
  std::shared_ptr<const uint8_t> allowed;       // [B, L, S] 1 = may attend; null = every cell allowed
  std::shared_ptr<const AttentionTrace> trace;  // the trace this layer came from; null when imported
  float scale = 0.0f;            // factor applied to Q K^T (0 = unknown)
  bool dropout_applied = false;  // probs are after dropout
  std::string mask_name;         // "causal+window:3", "none"; "" = unknown (imported)
};

// Where a label came from, when the source knows (a Hugging Face tokenizer, a bundle's
// tokens.json): the vocabulary's raw piece ("Ġthe", "▁the", "<0x0A>") and its id.
struct TokenPiece {
  std::string raw;
  int64_t id = -1;     // -1 = unknown
  std::string source{};  // the text an unknown token ("[UNK]") stands for, "" otherwise
};

// A trained model's guess for the token after one query position (softmax of its logits
// row, computed in core when the run is made).
struct TokenGuess {
  std::string label;  // one printable line ("\\n")
  double prob = 0.0;
  int64_t id = -1;    // the token's id (-1: not known, an imported bundle's)
};
struct NextTokenPredictions {
  std::vector<TokenGuess> top;  // best first (k = 5, or V when smaller); empty: not computed
                                // (the run did not unembed this position: ViewModel::more_predictions)
  std::string actual;           // the token at position + 1 (masked LM: at position) as a label; "" past the end
  double actual_prob = 0.0;     // the model's probability for it (0 at the last position)
  bool actual_is_top = false;   // the top guess is the actual next character
  int64_t actual_rank = 0;      // its rank among all tokens (1 = the top guess); 0 at the last position
};

// The predictions of one 64-row block of positions (model/model_run.h LogitRows).
struct PredictionBlock {
  int64_t first = 0;                       // the position of rows[0]
  std::vector<NextTokenPredictions> rows;  // the block's positions, in order
};

// Predictions computed when looked at (ViewModel::more_predictions): block(position) gives
// the 64-row block holding position. Copies of a view share it (its identity names the run).
struct LaterPredictions {
  std::function<PredictionBlock(int64_t position)> block;
};

// Lens columns computed when looked at (a text past the eager lens budget): columns(p) gives
// the block of positions holding p, from a copy of the run's residuals, without rerunning the
// model (const data: call it off the UI thread). Copies of a view share it.
struct LensColumns {
  int64_t first = 0, count = 0;                // positions [first, first + count)
  std::vector<std::vector<TokenGuess>> cells;  // [layers * count], best first
};
struct LaterLens {
  int64_t block = 1;  // positions per columns() call
  std::function<LensColumns(int64_t position)> columns;
};

// The logit lens of a model run (model/logit_lens.h), labelled: for layer l (0 = the
// embeddings, k = the residual stream after k layers) and position t, the top guesses of the
// model's output head on that residual: computed in core when the run is made (a generation's:
// the columns of its steps, a column not computed left empty), or (later set, cells empty)
// column by column when looked at.
struct LensTable {
  int64_t layers = 0, positions = 0;           // N + 1, L
  std::vector<std::vector<TokenGuess>> cells;  // [layers * positions], best first (k = 5); {} = not computed
  std::shared_ptr<const LaterLens> later;      // the columns on demand; null when cells are set
  std::string off_reason;                      // why a model run has no lens ("" when it has one)
  bool empty() const { return cells.empty() && !later; }
  const std::vector<TokenGuess>& at(int64_t layer, int64_t position) const { return cells.at(layer * positions + position); }
};

// A head that a trained model's training.json names as the best for one pattern.
struct HeadNote {
  int64_t layer = 0, head = 0;
  std::string pattern;  // "previous token", "induction", ... (underscores as spaces)
  double score = 0.0;   // the pattern score training.json reports
  std::string text() const;  // "L1H3 induction 0.58"
};

// Ranges of one [L, S] map over its allowed cells with finite values.
struct MapRange {
  float min = 0.0f, max = 0.0f;   // 0, 0 when no cell counts
  float min_positive = INFINITY;  // smallest value > 0 (log-scale floor); inf when none
  float abs_max = 0.0f;           // largest |v|
  int64_t allowed_cells = 0;      // cells that counted (allowed; finite values)
};
// values: [cells]; allowed: [cells], 1 = counts, or null = every cell (view/map_range.cpp,
// vectorised).
MapRange mapRange(const float* values, const uint8_t* allowed, int64_t cells);

// A map as a texture shows it: [rows, cols] row-major, masked cells -inf, block-pooled
// (core/view/downsample) to at most kTextureMaxSide per side: max for probabilities and the
// mask (1 allowed), largest |v| for scores. rows/cols < L/S means pooled.
struct PooledMap {
  int64_t rows = 0, cols = 0;
  std::vector<float> values;
};

// Any [rows, cols] map as a texture shows it (what textureMap does for the view's own
// maps): cells where allowed ([rows, cols], or null = all) is 0 become -inf, then maps
// larger than kTextureMaxSide are pooled (largest |v| for Scores, i.e. diverging maps).
PooledMap textureOfMap(const float* values, const uint8_t* allowed, int64_t rows, int64_t cols, MapKind kind);

// Largest texture side: every pooled block gets a pixel on the default window's focus
// heatmap (293 px); bigger maps are pooled so that isolated peaks stay visible.
inline constexpr int64_t kTextureMaxSide = 256;

// One part of a layer's mask (a core trace's mask component, e.g. "causal") as a texture
// shows it: 1 allowed, -inf blocked, pooled like the combined mask.
struct ComponentMap {
  std::string name;
  PooledMap map;
  int64_t allowed_cells = 0;
};

// Attention rollout or flow (analysis/layer_maps.h): for every (layer, batch item), how much
// each output position after that layer draws from each input token. Built on request.
struct AcrossLayerMaps {
  MapKind kind = MapKind::Rollout;
  Tensor values;                  // [layers, B, L, L] rows sum to 1
  std::vector<MapRange> ranges;   // [layers, B]
  std::vector<PooledMap> pooled;  // [layers, B]; only when L > kTextureMaxSide (else empty)
  const float* map(int64_t layer, int64_t b) const;  // [L, L] (checked)
};

// A number no other ViewModel of this process has had: caches of a view (textures, label
// widths, head tables, rollout builds) key on it, not on the object's address, which a new
// view can reuse once an old one is freed. A copy (a view extended with rollout) gets its own.
class ViewStamp {
 public:
  ViewStamp() : value_(next()) {}
  ViewStamp(const ViewStamp&) : value_(next()) {}
  ViewStamp& operator=(const ViewStamp&) {
    value_ = next();
    return *this;
  }
  uint64_t value() const { return value_; }

 private:
  static uint64_t next();  // 1, 2, ... (thread-safe: views are built on worker threads)
  uint64_t value_;
};

// A knocked-out query-key cell of a model run (model/interventions.h Knockout): head -1 = every
// head of the layer.
struct KnockedCell {
  int64_t layer = 0, head = -1, query = 0, key = 0;
};
inline constexpr uint8_t kNotAblated = 0, kAblatedZero = 1, kAblatedMean = 2;

struct ViewModel {
  ViewStamp stamp;  // this object's identity for caches (never 0)
  ViewSource source = ViewSource::CoreTrace;
  int64_t layers = 0, B = 0, H = 0, L = 0, S = 0;
  std::vector<LayerMaps> maps;                         // [layers]
  std::vector<std::vector<std::string>> query_tokens;  // [B][L]
  std::vector<std::vector<std::string>> key_tokens;    // [B][S]
  // Raw pieces and ids behind the labels, where known; empty otherwise (tooltips show them).
  std::vector<std::vector<TokenPiece>> query_pieces;   // [B][L] or empty
  std::vector<std::vector<TokenPiece>> key_pieces;     // [B][S] or empty
  std::vector<MapRange> probs_ranges;                  // [layers, B, H]
  // Pooled copies, built only for maps larger than kTextureMaxSide (else empty). The scores'
  // are pooled when asked (textureMap): the app draws the focused head's only.
  std::vector<PooledMap> pooled_probs;                 // [layers, B, H]
  std::vector<PooledMap> pooled_mask;                  // [layers, B]
  // Mask statistics, counted off the UI thread (empty without a mask):
  std::vector<int64_t> allowed_counts;                 // [layers, B] cells the combined mask allows
  std::vector<int64_t> fully_masked_counts;            // [layers, B] query rows with no allowed key
  std::vector<std::vector<ComponentMap>> component_maps;  // [layers, B][component] (core traces)
  std::vector<std::string> warnings;                   // one line each, e.g. rows not summing to 1
  std::string model;                                   // imported: bundle.json "model"; model run: its name
  std::string notes;                                   // imported: bundle.json "notes"; model run: the caption
  // Model runs (model/folder_runner.h) only; empty otherwise:
  std::vector<NextTokenPredictions> predictions;       // [L] the guess after each query position
  bool encoder = false;  // a bidirectional encoder's run (BERT): nothing to generate, and its
                         // predictions[t] are masked-LM guesses of the token at t itself (their
                         // `actual` is that token, not the next one)
  // Logits only where they are looked at: a run that unembedded some positions only computes
  // the 64-row block holding any other position here, from the run's final residual rows,
  // without rerunning the model (const data: call it off the UI thread). Null when the run
  // unembedded every position (or has no output head).
  std::shared_ptr<const LaterPredictions> more_predictions;
  int64_t logits_rows = 0;                             // positions the run unembedded
  LensTable lens;                                      // the logit lens; empty without output head
  std::vector<HeadNote> notable_heads;                 // from training.json, best score first
  int64_t unknown_tokens = 0;                          // characters outside the vocabulary (unk id)
  int64_t context = 0;                                 // the model's max_len (tokens)
  // A generation (the app's Generate control, a generation bundle): positions from here on
  // were generated (the prompt's length); -1 = none.
  int64_t first_generated = -1;
  std::string generated_text;  // a generation bundle's generated.txt ("" otherwise)
  // The run computed rows [first_computed, L); rows before it were kept from the run before
  // (a causal model's cache, model/model_run.h ModelRun). 0 = every row.
  int64_t first_computed = 0;
  std::vector<LayerFacts> layer_facts;                 // [layers] a model run's (empty for other sources)
  // A model run's interventions (model/interventions.h: "ablate L1H2; knockout L0H1:3-2"), "" when none.
  std::string interventions;
  // The same, as the views draw them: each head's ablation [layers, H] (kNotAblated,
  // kAblatedZero, kAblatedMean; empty when none) and the knocked-out cells.
  std::vector<uint8_t> ablated_heads;
  std::vector<KnockedCell> knocked_cells;
  uint8_t ablation(int64_t layer, int64_t head) const {
    return ablated_heads.empty() ? kNotAblated : ablated_heads[static_cast<size_t>(layer * H + head)];
  }
  bool knockedOut(int64_t layer, int64_t head, int64_t query, int64_t key) const;
  // With interventions: the next-token probabilities [V] after the last position of the same
  // text without them (the predictions panel's "before"); empty otherwise.
  std::vector<double> baseline_next;
  // Tiled: the real map behind the overview; null otherwise.
  std::shared_ptr<const TiledMaps> tiled;
  // The core's trace (CoreTrace: the one layer's) for the pipeline panel; null otherwise.
  std::shared_ptr<const AttentionTrace> trace;
  // Rollout and flow once built (analysis/layer_maps.h: addAcrossLayerMaps); empty before.
  std::vector<std::shared_ptr<const AcrossLayerMaps>> across_layers;

  bool hasScores() const { return !maps.empty() && maps[0].scores != nullptr; }
  bool hasMask() const { return !maps.empty() && maps[0].allowed != nullptr; }
  bool pooled() const { return L > kTextureMaxSide || S > kTextureMaxSide; }
  // The real map's size: L and S, or a tiled source's (whose maps here are its overview).
  // Zoom windows, axis labels and hovered cells of the focus view are in these units.
  int64_t mapL() const { return tiled ? tiled->L : L; }
  // Batch item b's labels of the real map's query rows (a tiled source's own name overview blocks).
  const std::vector<std::string>& mapQueryTokens(int64_t b = 0) const {
    return (tiled ? tiled->query_tokens : query_tokens).at(static_cast<size_t>(b));
  }
  int64_t mapS() const { return tiled ? tiled->S : S; }

  // Slices; layer/b/h are checked (std::out_of_range). [L, S] row-major.
  const float* probs(int64_t layer, int64_t b, int64_t h) const;
  const float* scores(int64_t layer, int64_t b, int64_t h) const;  // nullptr without scores
  const uint8_t* allowed(int64_t layer, int64_t b) const;          // nullptr = all allowed
  bool isAllowed(int64_t layer, int64_t b, int64_t i, int64_t j) const;

  const MapRange& probsRange(int64_t layer, int64_t b, int64_t h) const;
  // Needs scores; measured when asked (one read of the map), as only a focused head's scores
  // are drawn or exported: a keystroke does not read every score map for a range nobody shows.
  MapRange scoresRange(int64_t layer, int64_t b, int64_t h) const;
  // Probability range of batch item b over every head of the given layers (all when empty):
  // the shared colour scale of a head grid or layer x head atlas.
  MapRange probsRangeOver(int64_t b, const std::vector<int64_t>& layers = {}) const;

  // The built rollout or flow maps; null when not built (yet).
  const AcrossLayerMaps* acrossLayers(MapKind kind) const;

  // The texture values of one map (Mask, Rollout and Flow ignore h; the latter two need
  // their maps built, else std::logic_error): the pooled copy when the map is larger
  // than kTextureMaxSide, else the map itself with masked cells -inf.
  PooledMap textureMap(MapKind kind, int64_t layer, int64_t b, int64_t h) const;
  // The texture values of a zoomed window of one map (resolveWindow'd against L, S): each
  // cell exactly when the window fits kTextureMaxSide per side, else block-pooled by the
  // same rule as textureMap. InputError when the window is outside the map.
  PooledMap windowMap(MapKind kind, int64_t layer, int64_t b, int64_t h, const CellWindow& window) const;

  size_t mapIndex(int64_t layer, int64_t b, int64_t h) const;  // into [layers, B, H] vectors
};

// From one core trace (one layer named "layer 0"): aliases the trace's tensors, keeps the
// trace. Throws InputError on a null trace.
ViewModel viewFromTrace(std::shared_ptr<const AttentionTrace> trace);

// From one trace per layer (a model run). Every trace must have the same B, H, L, S
// (InputError naming the layer otherwise); names default to "layer i".
ViewModel viewFromTraces(const std::vector<std::shared_ptr<const AttentionTrace>>& traces,
                         std::vector<std::string> layer_names = {},
                         ViewSource source = ViewSource::ModelRun);

// From a tiled run's overview (probs, scores, pooled mask) of `attention`: one layer, L =
// overview.rows and S = overview.cols, each overview row and column labelled with the real
// range it covers ("128-255"); query_tokens [B][L] / key_tokens [B][S] label the real map.
ViewModel viewFromOverview(std::shared_ptr<const TiledAttention> attention, Overview overview,
                           std::vector<std::vector<std::string>> query_tokens,
                           std::vector<std::vector<std::string>> key_tokens);
// The same for several layers of one run (a model's), one overview each, all of one size
// and with the same measures; layers named "layer i". InputError when they do not agree.
ViewModel viewFromOverviews(std::vector<std::shared_ptr<const TiledAttention>> layers, std::vector<Overview> overviews,
                            std::vector<std::vector<std::string>> query_tokens,
                            std::vector<std::vector<std::string>> key_tokens);

// Maps computed elsewhere, already checked finite by the reader.
struct ImportedMaps {
  Tensor maps;                                         // [layers, B, H, L, S] probabilities
  std::vector<std::vector<std::string>> query_tokens;  // [B][L], or one [L] row for every item
  std::vector<std::vector<std::string>> key_tokens;    // [B][S], one [S] row, or empty = query's
  std::vector<std::vector<TokenPiece>> query_pieces;   // [B][L] or empty (labels only)
  std::vector<std::vector<TokenPiece>> key_pieces;     // [B][S] or empty = query's when S == L
  // Padding (attention_mask.npy): [B, L, S], 1 = a real query and key, 0 = padding; empty =
  // every cell allowed. Shared by every layer; padded cells show as masked.
  std::vector<uint8_t> allowed;
  std::vector<std::string> layer_names;                // [layers] or empty
  std::string model, notes;
  std::string origin;  // file the maps came from, named in warnings ("bundle/attentions.npy")
  int64_t first_generated = -1;  // a generation bundle (tokens.txt's `generated` column): its first generated position
  // A generation bundle's steps.json: [L] the top-5 before each generated token (at the
  // position before it) with the token chosen; empty `top` elsewhere; empty when none.
  std::vector<NextTokenPredictions> predictions;
  std::string generated_text;  // its generated.txt ("" otherwise)
};
// Rows that are not probability distributions (a negative value, or a sum off 1 by more
// than 1e-3) are kept and counted in one warning line. Throws InputError on shapes that
// do not agree.
ViewModel viewFromImported(ImportedMaps maps);

}  // namespace attnscope
