#include "model/interventions.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "model/model_config.h"
#include "tensor/tensor.h"

namespace attnscope {
namespace {

std::vector<std::string> splitItems(const std::string& spec) {
  std::vector<std::string> items;
  size_t at = 0;
  while (at <= spec.size()) {
    const size_t comma = std::min(spec.find(',', at), spec.size());
    items.push_back(spec.substr(at, comma - at));
    at = comma + 1;
  }
  return items;
}

// A non-negative integer spelling all of text[at, end) (digits only), or -1.
int64_t number(const std::string& text, size_t at, size_t end) {
  if (at >= end || end - at > 9) return -1;
  int64_t n = 0;
  for (size_t k = at; k < end; ++k) {
    if (text[k] < '0' || text[k] > '9') return -1;
    n = n * 10 + (text[k] - '0');
  }
  return n;
}

InputError badItem(const std::string& flag, const std::string& item, const std::string& problem) {
  return InputError(flag + ": \"" + item + "\": " + problem);
}

// "L1H2" (head -1 for "H*") at the start of item, up to `end`; false when it is not one.
bool layerHead(const std::string& item, size_t end, int64_t& layer, int64_t& head) {
  const size_t h = item.find('H');
  if (item.empty() || item[0] != 'L' || h == std::string::npos || h >= end) return false;
  layer = number(item, 1, h);
  head = item.substr(h + 1, end - h - 1) == "*" ? -1 : number(item, h + 1, end);
  return layer >= 0 && (head >= 0 || item.substr(h + 1, end - h - 1) == "*");
}

HeadAblation parseAblation(const std::string& item) {
  HeadAblation a;
  a.item = item;
  const size_t colon = item.find(':');
  const std::string mode = colon == std::string::npos ? "zero" : item.substr(colon + 1);
  if (!layerHead(item, std::min(colon, item.size()), a.layer, a.head) || (mode != "zero" && mode != "mean"))
    throw badItem("--ablate", item, "not LAYER HEAD as L1H2, L3H* (every head), with :zero (the default) or :mean");
  a.mode = mode == "mean" ? AblationMode::Mean : AblationMode::Zero;
  return a;
}

Knockout parseKnockout(const std::string& item) {
  Knockout k;
  k.item = item;
  const size_t colon = item.find(':'), dash = item.find('-', colon == std::string::npos ? 0 : colon);
  const bool ok = colon != std::string::npos && dash != std::string::npos && layerHead(item, colon, k.layer, k.head) &&
                  (k.query = number(item, colon + 1, dash)) >= 0 && (k.key = number(item, dash + 1, item.size())) >= 0;
  if (!ok) throw badItem("--knockout", item, "not LAYER HEAD:QUERY-KEY as L1H0:9-2 or L2H*:5-0 (positions from 0)");
  return k;
}

std::string headName(int64_t layer, int64_t head) {
  return "L" + std::to_string(layer) + "H" + (head < 0 ? std::string("*") : std::to_string(head));
}

// The layer and head of an item against the model: InputError naming the flag and the item.
void checkLayerHead(const std::string& flag, const std::string& item, int64_t layer, int64_t head, const ModelConfig& c) {
  if (layer >= c.n_layers)
    throw badItem(flag, item, "the model has " + std::to_string(c.n_layers) + (c.n_layers == 1 ? " layer" : " layers"));
  if (head >= c.heads)
    throw badItem(flag, item, "the model has " + std::to_string(c.heads) + (c.heads == 1 ? " head" : " heads") + " per layer");
}

// Which heads of H an item names (head -1: all).
bool names(int64_t item_head, int64_t h) { return item_head < 0 || item_head == h; }

}  // namespace

std::string Interventions::ablateSpec() const {
  std::string s;
  for (const HeadAblation& a : ablations)
    s += (s.empty() ? "" : ",") + headName(a.layer, a.head) + (a.mode == AblationMode::Mean ? ":mean" : "");
  return s;
}

std::string Interventions::knockoutSpec() const {
  std::string s;
  for (const Knockout& k : knockouts)
    s += (s.empty() ? "" : ",") + headName(k.layer, k.head) + ":" + std::to_string(k.query) + "-" + std::to_string(k.key);
  return s;
}

std::string Interventions::describe() const {
  std::string s;
  if (!ablations.empty()) s = "ablate " + ablateSpec();
  if (!knockouts.empty()) s += (s.empty() ? "" : "; ") + std::string("knockout ") + knockoutSpec();
  return s;
}

Interventions parseInterventions(const std::string& ablate, const std::string& knockout) {
  Interventions in;
  if (!ablate.empty())
    for (const std::string& item : splitItems(ablate)) in.ablations.push_back(parseAblation(item));
  if (!knockout.empty())
    for (const std::string& item : splitItems(knockout)) in.knockouts.push_back(parseKnockout(item));
  return in;
}

void checkInterventions(const Interventions& in, const ModelConfig& c, int64_t L) {
  for (const HeadAblation& a : in.ablations) checkLayerHead("--ablate", a.item, a.layer, a.head, c);
  for (const Knockout& k : in.knockouts) {
    checkLayerHead("--knockout", k.item, k.layer, k.head, c);
    if (L >= 0 && std::max(k.query, k.key) >= L)
      throw badItem("--knockout", k.item, "position " + std::to_string(std::max(k.query, k.key)) + " is past the text's " +
                                              std::to_string(L) + " tokens (positions 0 to " + std::to_string(L - 1) + ")");
    if (c.family->causal && k.key > k.query)
      throw badItem("--knockout", k.item, "key " + std::to_string(k.key) + " is after query " + std::to_string(k.query) +
                                              ": a causal model's query never attends to it");
  }
}

HeadEdits headEdits(const Interventions& in, int64_t layer, int64_t H, int64_t L) {
  HeadEdits edits(static_cast<size_t>(H));
  bool any = false;
  for (const HeadAblation& a : in.ablations)
    for (int64_t h = 0; h < H && a.layer == layer; ++h)
      if (names(a.head, h)) edits[h].z = a.mode == AblationMode::Mean ? HeadEdit::Z::Mean : HeadEdit::Z::Zero, any = true;
  for (const HeadPatch& p : in.head_patches)
    if (p.layer == layer && p.head < H) edits[p.head].z = HeadEdit::Z::Replace, edits[p.head].z_rows = p.z.data(), any = true;
  for (const Knockout& k : in.knockouts)
    for (int64_t h = 0; h < H && k.layer == layer && k.query < L && k.key < L; ++h)
      if (names(k.head, h)) edits[h].knockout.emplace_back(k.query, k.key), any = true;
  return any ? edits : HeadEdits();
}

bool hasMeanAblation(const Interventions& in, int64_t layer) {
  return std::any_of(in.ablations.begin(), in.ablations.end(),
                     [layer](const HeadAblation& a) { return a.layer == layer && a.mode == AblationMode::Mean; });
}

namespace {

// One layer's interventions in a form two sets compare by: each head's z edit, the
// knocked-out cells (head, query, key) and the patched residual rows.
struct LayerEffect {
  std::vector<std::pair<int, const std::vector<float>*>> z;  // [H]: Z as int, the patch's rows
  std::set<std::tuple<int64_t, int64_t, int64_t>> cells;
  std::map<int64_t, const std::vector<float>*> residual;       // position -> x [D]
};

LayerEffect effectOf(const Interventions& in, int64_t layer, int64_t H) {
  LayerEffect e;
  e.z.assign(static_cast<size_t>(H), {0, nullptr});
  for (const HeadAblation& a : in.ablations)
    for (int64_t h = 0; h < H && a.layer == layer; ++h)
      if (names(a.head, h)) e.z[h] = {a.mode == AblationMode::Mean ? 2 : 1, nullptr};
  for (const HeadPatch& p : in.head_patches)
    if (p.layer == layer && p.head < H) e.z[p.head] = {3, &p.z};
  for (const Knockout& k : in.knockouts)
    for (int64_t h = 0; h < H && k.layer == layer; ++h)
      if (names(k.head, h)) e.cells.emplace(h, k.query, k.key);
  for (const ResidualPatch& r : in.residual_patches)
    if (r.layer == layer) e.residual[r.position] = &r.x;
  return e;
}

bool sameRows(const std::vector<float>* a, const std::vector<float>* b) { return a == b || (a && b && *a == *b); }

// The first position whose rows differ between two layers' effects (L: none); with_z false:
// their z edits left out.
int64_t firstDifference(const LayerEffect& a, const LayerEffect& b, int64_t L, bool with_z) {
  for (size_t h = 0; h < a.z.size() && with_z; ++h)
    if (a.z[h].first != b.z[h].first || !sameRows(a.z[h].second, b.z[h].second)) return 0;
  int64_t first = L;
  for (const auto* cells : {&a.cells, &b.cells})
    for (const auto& cell : *cells)
      if (!(cells == &a.cells ? b.cells : a.cells).count(cell)) first = std::min(first, std::get<1>(cell));
  for (const auto* rows : {&a.residual, &b.residual})
    for (const auto& [position, x] : *rows) {
      const auto& other = rows == &a.residual ? b.residual : a.residual;
      const auto found = other.find(position);
      if (found == other.end() || !sameRows(found->second, x)) first = std::min(first, position);
    }
  return std::min(first, L);
}

std::vector<int64_t> layerDifferences(const Interventions& a, const Interventions& b, int64_t N, int64_t H, int64_t L,
                                      bool with_z) {
  std::vector<int64_t> rows(static_cast<size_t>(N), L);
  if (a.empty() && b.empty()) return rows;
  for (int64_t i = 0; i < N; ++i) rows[i] = firstDifference(effectOf(a, i, H), effectOf(b, i, H), L, with_z);
  return rows;
}

}  // namespace

std::vector<int64_t> changedRows(const Interventions& a, const Interventions& b, int64_t N, int64_t H, int64_t L) {
  return layerDifferences(a, b, N, H, L, true);
}

std::vector<int64_t> attentionChangedRows(const Interventions& a, const Interventions& b, int64_t N, int64_t H, int64_t L) {
  return layerDifferences(a, b, N, H, L, false);
}

}  // namespace attnscope
