#include "model/folder_runner.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

#include "analysis/head_table.h"
#include "attention/tiles.h"
#include "tensor/memory.h"

namespace attnscope {
namespace {

constexpr int64_t kTopGuesses = 5;  // the predictions shown at each position

// The lens of one run with its guesses labelled (empty lens: empty table).
LensTable lensTable(const LogitLens& lens, const std::function<std::string(int64_t)>& label) {
  LensTable table;
  if (lens.empty()) return table;
  table.layers = lens.layers;
  table.positions = lens.positions;
  table.cells.resize(lens.layers * lens.positions);
  for (int64_t cell = 0; cell < lens.layers * lens.positions; ++cell)
    for (int64_t rank = 0; rank < lens.k; ++rank)
      table.cells[cell].push_back({label(lens.ids[cell * lens.k + rank]), lens.probs[cell * lens.k + rank]});
  return table;
}

using TokenLabelOf = std::function<std::string(int64_t)>;

// The top-5 at position t from its logits [V], and the actual token of `tokens` they guess
// (t + ahead: 1 for a causal model's next token, 0 for an encoder's masked-LM guess at t
// itself) with its probability and rank.
NextTokenPredictions predictionAt(const float* logits, int64_t V, const ModelTokens& tokens, int64_t t, int64_t ahead,
                                  const TokenLabelOf& label) {
  NextTokenPredictions p;
  const int64_t L = static_cast<int64_t>(tokens.ids.size());
  const std::vector<double> probs = nextTokenProbs(logits, V);
  const std::vector<int64_t> top = topIds(probs, kTopGuesses);
  for (int64_t id : top) p.top.push_back({label(id), probs[id], id});
  if (t + ahead < L) {
    const int64_t next = tokens.ids[t + ahead];
    p.actual = tokens.label[t + ahead];
    p.actual_prob = probs[next];
    p.actual_is_top = !tokens.unknown[t + ahead] && top.front() == next;
    p.actual_rank = 1;  // as GenerationStep::rank: ties go to the smaller id
    for (size_t j = 0; j < probs.size(); ++j)
      if (probs[j] > probs[next] || (probs[j] == probs[next] && static_cast<int64_t>(j) < next)) ++p.actual_rank;
  }
  return p;
}

// A run that kept Q, K and the row normalisers instead of its maps (ModelRun::mapsKept
// false): every layer's overview pooled to at most kTextureMaxSide per side, measured for the
// head table as a synthetic tiled run is, and exact windows on demand (attention/tiles.h).
ViewModel tiledViewOfRun(const ModelRun& run, const std::function<AttentionOptions(int64_t)>& layer_options,
                         const Progress& progress) {
  const std::vector<std::string>& labels = run.layers.front().query_tokens;  // [L], "(unk)" marked
  const int64_t L = static_cast<int64_t>(labels.size()), side = std::min(L, kTextureMaxSide);
  const OverviewMeasures measures = headTableMeasures(L, L, {labels});
  std::vector<std::shared_ptr<const TiledAttention>> layers;
  std::vector<Overview> overviews;
  const double N = static_cast<double>(run.layers.size());
  for (size_t l = 0; l < run.layers.size(); ++l) {
    layers.push_back(std::make_shared<const TiledAttention>(
        tiledFromTrace(run.layers[l], layer_options(static_cast<int64_t>(l)))));
    const auto layer_progress = [&](double f) { return !progress || progress((static_cast<double>(l) + f) / N); };
    std::optional<Overview> overview = computeOverview(*layers.back(), side, side, layer_progress, measures);
    if (!overview) throw Cancelled();
    overviews.push_back(std::move(*overview));
  }
  ViewModel view = viewFromOverviews(std::move(layers), std::move(overviews), {labels}, {labels});
  view.source = ViewSource::ModelRun;  // a model's run, its maps in tiles
  return view;
}

// The maps, labels, top-5 predictions (at the positions whose logits the run computed) and
// logit lens of one run of either kind of model; label(id) names a vocabulary entry;
// layer_options(l) the options layer l ran with; encoder: a bidirectional encoder's run
// (ViewModel::encoder); traces: the run's, shared by its runner, or empty (copied from run).
// No predictions without logits (an encoder without MLM head).
ViewModel viewFromRun(const ModelRun& run, const LogitLens& lens, const TokenLabelOf& label,
                      const std::function<AttentionOptions(int64_t)>& layer_options, bool encoder,
                      const Progress& progress, std::vector<std::shared_ptr<const AttentionTrace>> traces) {
  if (run.mapsKept() && traces.empty())
    for (const AttentionTrace& trace : run.layers) traces.push_back(std::make_shared<const AttentionTrace>(trace));
  ViewModel view = run.mapsKept() ? viewFromTraces(traces) : tiledViewOfRun(run, layer_options, progress);
  view.unknown_tokens = run.tokens.unknownCount();
  view.first_computed = run.first_computed;
  view.encoder = encoder;
  if (run.logits.empty()) return view;
  view.lens = lensTable(lens, label);
  view.logits_rows = run.logits_rows;
  const int64_t L = static_cast<int64_t>(run.tokens.ids.size());
  view.predictions.resize(L);
  // A softmax and a top-5 over the vocabulary per position: at 1,000 positions of GPT-2 a
  // fifth of a long text's export, so the positions share the threads.
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t t = 0; t < L; ++t)
    if (const float* row = run.logits.row(t))
      view.predictions[t] = predictionAt(row, run.logits.vocab(), run.tokens, t, encoder ? 0 : 1, label);
  return view;
}

// The predictions of the positions `run` did not unembed, for later (ViewModel::more_predictions):
// a copy of its final residual rows and tokens; head and label keep the model alive.
std::shared_ptr<const LaterPredictions> laterPredictions(const ModelRun& run, int64_t ahead, RowHead head,
                                                         TokenLabelOf label) {
  auto residual = std::make_shared<const Tensor>(run.final_residual);
  auto tokens = std::make_shared<const ModelTokens>(run.tokens);
  const int64_t V = run.logits.vocab();
  auto later = std::make_shared<LaterPredictions>();
  later->block = [residual, tokens, V, ahead, head = std::move(head), label = std::move(label)](int64_t position) {
    const std::pair<int64_t, int64_t> block = logitBlock(position, residual->dim(0));
    Tensor logits({block.second - block.first, V});
    blockLogits(*residual, block, head, logits.data.data());
    PredictionBlock out{block.first, {}};
    for (int64_t t = block.first; t < block.second; ++t)
      out.rows.push_back(predictionAt(&logits.data[(t - block.first) * V], V, *tokens, t, ahead, label));
    return out;
  };
  return later;
}

// Lens columns [first, first + count) of residuals [N + 1, L, D]: every layer's rows through
// the head in one call, so its unembedding matrix is read once, not once per layer (a column
// of GPT-2 small: 13 rows against 13 reads of 154 MB). The head is row by row, so each cell
// equals the whole lens's bit for bit.
LensColumns lensColumnsOf(const Tensor& residuals, int64_t first, int64_t count, const OutputHead& head,
                          const TokenLabelOf& label) {
  // Test hook (GUI tests of a column still computing, tests/gui/test_lens_gui.py): a wait in
  // milliseconds before each block of columns. Unset in normal use.
  if (const std::optional<uint64_t> ms = bytesFromEnvironment("ATTNSCOPE_TEST_LENS_COLUMN_DELAY_MS"))
    std::this_thread::sleep_for(std::chrono::milliseconds(*ms));
  const int64_t layers = residuals.dim(0), L = residuals.dim(1), D = residuals.dim(2);
  Tensor rows({layers * count, D});  // [N + 1, count, D]: the columns' rows of every layer
  for (int64_t l = 0; l < layers; ++l)
    std::copy_n(&residuals.data[(l * L + first) * D], count * D, &rows.data[l * count * D]);
  Tensor logits;  // [(N + 1) count, V]
  head(rows, logits);
  LensColumns out{first, count, {}};
  if (logits.empty()) return out;
  const int64_t V = logits.dim(1);
  for (int64_t r = 0; r < layers * count; ++r) {
    const std::vector<double> p = nextTokenProbs(&logits.data[r * V], V);  // softmax in double, as logitLens
    std::vector<TokenGuess>& cell = out.cells.emplace_back();
    for (int64_t id : topIds(p, std::min(kLensTop, V))) cell.push_back({label(id), static_cast<float>(p[id])});
  }
  return out;
}

// The lens of `run`'s residuals column by column (ViewModel::lens.later), `block` positions
// per call: a copy of the residuals [N + 1, L, D]; head and label keep the model alive.
std::shared_ptr<const LaterLens> laterLens(const ModelRun& run, int64_t block, OutputHead head, TokenLabelOf label) {
  auto residuals = std::make_shared<const Tensor>(run.residuals);
  auto later = std::make_shared<LaterLens>();
  later->block = block;
  later->columns = [residuals, block, head = std::move(head), label = std::move(label)](int64_t position) {
    const int64_t first = position / block * block;
    return lensColumnsOf(*residuals, first, std::min(block, residuals->dim(1) - first), head, label);
  };
  return later;
}

}  // namespace

LayerFacts layerFacts(const ModelConfig& c, int64_t i) {
  LayerFacts f;
  f.heads = c.heads, f.kv_heads = c.kv_heads, f.head_dim = c.head_dim, f.width = c.hidden;
  const AttentionOptions o = layerOptions(c, i);  // the window, scale and RoPE the layer runs with
  f.own_head_dim = c.heads * c.head_dim != c.hidden;
  f.window = o.mask.causal_window;
  f.sliding_window = f.window >= 0 ? f.window + 1 : 0;
  f.softcap = c.attn_softcap;
  f.scale = c.attn_scale;
  if (c.family->positions == Positions::Rope) f.positions = o.rope ? LayerPositions::Rope : LayerPositions::NoPe;
  if (o.rope) {
    const RopeParams rope = ropeOf(c, i);
    f.rope_base = rope.theta;
    f.rope_type = rope.type;
    f.rotary_dims = o.rope_inv_freq.empty() ? c.head_dim : 2 * static_cast<int64_t>(o.rope_inv_freq.size());
    f.rope_attention_factor = o.rope_attention_factor;
  }
  const Family& family = *c.family;
  if (family.names.has(Role::QProjNorm)) f.qk_norm = QkNorm::WholeProjection;
  else if (family.names.has(Role::QNorm)) f.qk_norm = QkNorm::PerHead;
  return f;
}

ViewModel viewFromModelRun(const Model& model, const ModelRun& run, const Progress& progress, bool lens,
                           std::vector<std::shared_ptr<const AttentionTrace>> traces) {
  ViewModel view = viewFromRun(run, lens ? modelLens(model, run) : LogitLens(), [&](int64_t id) { return tokenLabel(model, id); },
                               [&](int64_t layer) { return layerOptions(model.config, layer); },
                               !model.config.family->causal, progress, std::move(traces));
  view.model = model.name();
  view.notes = model.caption;
  for (int64_t l = 0; l < model.config.n_layers; ++l) view.layer_facts.push_back(layerFacts(model.config, l));
  view.context = model.context();
  for (const NotableHead& h : model.notable_heads) {
    std::string pattern = h.pattern;
    std::replace(pattern.begin(), pattern.end(), '_', ' ');
    view.notable_heads.push_back({h.layer, h.head, pattern, h.score});
  }
  if (model.chars) return view;  // a character or byte is its own label
  std::vector<TokenPiece> pieces;  // the tooltips' raw piece and id
  const ModelTokens& tokens = run.tokens;
  for (size_t t = 0; t < tokens.ids.size(); ++t)
    pieces.push_back({tokens.text[t], tokens.ids[t], t < tokens.source.size() ? tokens.source[t] : ""});
  view.query_pieces.assign(static_cast<size_t>(view.B), pieces);
  view.key_pieces = view.query_pieces;
  return view;
}

FolderWeights loadFolderWeights(const std::string& folder, const Progress& progress) {
  return {folder, std::make_shared<const Model>(loadModel(folder, true, progress))};
}
FolderModelRunner::FolderModelRunner(const std::string& folder, const Progress& progress)
    : FolderModelRunner(loadFolderWeights(folder, progress)) {}

FolderModelRunner::FolderModelRunner(const FolderWeights& weights) : folder_(weights.folder), weights_(weights) {
  // Test hook (GUI tests of the lens past its budget on a small model): the budget in
  // multiply-adds. Unset in normal use.
  if (const std::optional<uint64_t> budget = bytesFromEnvironment("ATTNSCOPE_TEST_LENS_BUDGET"))
    lens_budget_ = static_cast<double>(*budget);
  runner_ = std::make_unique<ModelRunner>(weights.model);
  runner_->keepMapsWithin(fullPathBudgetBytes());
  const ModelConfig& c = weights.model->config;
  shape_ = {c.heads, c.kv_heads, c.head_dim, c.hidden, c.qkv_bias};
  n_layers_ = c.n_layers, vocab_ = c.vocab;
}

void FolderModelRunner::setCacheWindow(const CacheWindow& cache) { runner_->setCacheWindow(cache); }

FolderModelRunner::~FolderModelRunner() = default;

std::vector<double> FolderModelRunner::baselineNext(const ModelTokens& tokens) {
  const Model& model = runner_->model();
  if (runner_->interventions().empty() || !model.hasHead() || tokens.ids.empty()) {
    baseline_.reset();
    return {};
  }
  if (!baseline_) {
    baseline_ = std::make_unique<ModelRunner>(weights_.model);
    baseline_->keepMapsWithin(fullPathBudgetBytes());
    baseline_->logitRows(LogitRows{false, {-1}});
  }
  const ModelRun& run = baseline_->run(tokens);
  return nextTokenProbs(run.logits.row(static_cast<int64_t>(tokens.ids.size()) - 1), model.config.vocab);
}

namespace {

// How a run gets its logit lens ((N + 1) L D V multiply-adds): eagerly within `budget`; past it,
// with on_demand, column by column when looked at (LaterLens: its residuals kept, blocks of
// up to 16 positions within the budget) unless the residuals would pass kLaterLensBytes;
// otherwise off, with the reason for the app to show.
struct LensPlan {
  bool eager = false, later = false;
  int64_t block = 0;       // positions per later call
  std::string off_reason;  // "" when the run has a lens
  bool residuals() const { return eager || later; }
};
constexpr uint64_t kLaterLensBytes = uint64_t{1} << 30;

LensPlan lensPlan(int64_t layers, int64_t L, int64_t D, int64_t V, double budget, bool on_demand) {
  const double per_position = static_cast<double>(layers + 1) * D * V;
  if (per_position * L <= budget) return {true, false, 0, ""};
  const auto residual_bytes = static_cast<uint64_t>(layers + 1) * L * D * sizeof(float);
  if (on_demand && residual_bytes <= kLaterLensBytes)
    return {false, true, std::clamp<int64_t>(static_cast<int64_t>(budget / per_position), 1, 16), ""};
  const int64_t fits = static_cast<int64_t>(budget / per_position);
  std::string reason = "logit lens off: " + std::to_string(L) + " tokens; it is computed whole for up to " +
                       std::to_string(fits) + " tokens of this model";
  reason += on_demand ? ", and column by column while its residuals fit 1 GiB (" + std::to_string(residual_bytes >> 20) +
                            " MiB here)"
                      : "; open the Logit lens tab to compute it column by column";
  return {false, false, 0, reason + " (`attnscope model run --lens` has no limit)"};
}

// What the views draw of a run's interventions: each head's ablation [N, H] and the
// knocked-out cells (a layer's ablation, "L3H*", marks each of its heads).
void markInterventions(const Interventions& in, ViewModel& view) {
  if (in.ablations.empty() && in.knockouts.empty()) return;
  view.ablated_heads.assign(static_cast<size_t>(view.layers * view.H), kNotAblated);
  for (const HeadAblation& a : in.ablations)
    for (int64_t h = 0; h < view.H; ++h)
      if (a.head < 0 || a.head == h)
        view.ablated_heads[static_cast<size_t>(a.layer * view.H + h)] = a.mode == AblationMode::Mean ? kAblatedMean : kAblatedZero;
  for (const Knockout& k : in.knockouts) view.knocked_cells.push_back({k.layer, k.head, k.query, k.key});
}

}  // namespace

ViewModel FolderModelRunner::view(const std::string& text, TextSize* size, const LogitRows& logit_rows,
                                  const Progress& progress, bool lens_on_demand, Truncate truncate) {
  const auto started = std::chrono::steady_clock::now();
  const Model& model = runner_->model();
  TextTokens counted = textTokens(model, text, Truncate::None, 4 * model.context());
  if (size) *size = TextSize{counted.count, model.context(), tokenUnit(model), counted.more, counted.refused};
  if (counted.refused && truncate == Truncate::None) throw InputError(contextError(model, counted.count, counted.more));
  ModelTokens tokens = counted.refused ? textTokens(model, text, truncate).tokens : std::move(counted.tokens);
  const int64_t L = static_cast<int64_t>(tokens.ids.size());
  const LensPlan lens = lensPlan(n_layers_, L, shape_.width, vocab_, lens_budget_, lens_on_demand);
  keepResiduals(lens.residuals());
  runner_->logitRows(logit_rows);
  std::vector<double> baseline = baselineNext(tokens);
  const ModelRun& run = runner_->run(std::move(tokens));
  last_run_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  // The maps are shared with the runner, not copied (a gigabyte at 1,000 tokens of GPT-2 small).
  ViewModel view = viewFromModelRun(model, run, progress, lens.eager, runner_->shareTraces());
  view.interventions = runner_->interventions().describe();
  markInterventions(runner_->interventions(), view);
  view.baseline_next = std::move(baseline);
  if (view.predictions.empty()) return view;  // an encoder without masked-LM head: no lens either
  view.lens.off_reason = lens.off_reason;
  if (lens.later) {
    view.lens.layers = n_layers_ + 1, view.lens.positions = L;
    view.lens.later = laterLens(run, lens.block, outputHead(), tokenLabels());
  }
  if (!logit_rows.all && !run.logits.empty()) {
    RowHead head = [m = weights_.model](const Tensor& x, float* logits) { modelOutputLogits(*m, x, logits); };
    view.more_predictions = laterPredictions(run, view.encoder ? 0 : 1, std::move(head), tokenLabels());
  }
  return view;
}

void FolderModelRunner::keepResiduals(bool keep) { runner_->keepResiduals(keep); }

bool FolderModelRunner::lensFits(int64_t positions) const {
  return static_cast<double>(n_layers_ + 1) * shape_.width * vocab_ * positions <= lens_budget_;
}

LensColumns FolderModelRunner::lensColumns(const ModelRun& run, int64_t first, int64_t count) const {
  return lensColumnsOf(run.residuals, first, count, outputHead(), tokenLabels());
}

OutputHead FolderModelRunner::outputHead() const {
  return [m = weights_.model](const Tensor& x, Tensor& logits) {
    if (!m->hasHead()) {  // an encoder without masked-LM head: no logits, no lens
      logits = Tensor();
      return;
    }
    logits = Tensor({x.dim(0), m->config.vocab});
    modelOutputLogits(*m, x, logits.data.data());
  };
}

std::function<std::string(int64_t)> FolderModelRunner::tokenLabels() const {
  return [m = weights_.model](int64_t id) { return tokenLabel(*m, id); };
}

ModelTokens FolderModelRunner::tokenize(const std::string& text, Truncate truncate, int64_t room) const {
  return tokensForRun(runner_->model(), text, truncate, room);
}

ModelTokens FolderModelRunner::tokensFromIds(const std::vector<int64_t>& ids) const {
  return attnscope::tokensFromIds(runner_->model(), ids);
}

const ModelRun& FolderModelRunner::run(ModelTokens tokens) {
  runner_->logitRows(LogitRows{});
  runner_->run(std::move(tokens));
  runner_->unshareTraces();  // after a view() of the same tokens, its traces are still shared
  return runner_->last();
}

CausalModel FolderModelRunner::causalModel(StepMaps maps) { return causalModelOf(*runner_, maps); }

ViewModel FolderModelRunner::viewOf(const ModelRun& run) const {  // no whole lens: a generation adds its columns
  return viewFromModelRun(runner_->model(), run, {}, false);
}

std::string FolderModelRunner::tokenText(int64_t id) const { return attnscope::tokenText(runner_->model(), id); }

ViewModel viewOfModelFolder(const std::string& folder, const std::string& text, Truncate truncate,
                            const Interventions& interventions, bool pooled_maps) {
  FolderModelRunner runner(folder);
  runner.setInterventions(interventions);
  if (pooled_maps) {
    const ModelConfig& c = runner.model().config;
    runner.keepMapsWithin(std::min(fullPathBudgetBytes(), modelMapBytes(c.n_layers, c.heads, kTextureMaxSide)));
  }
  ViewModel view = runner.view(text, nullptr, {}, {}, false, truncate);
  checkInterventions(interventions, runner.model().config, view.mapL());  // positions past the text: refused here
  return view;
}

}  // namespace attnscope
