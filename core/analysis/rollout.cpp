#include "analysis/rollout.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <queue>
#include <string>
#include <vector>

#include <Eigen/Dense>

namespace attnscope {
namespace {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

void checkSelfAttention(const MapStack& maps, const char* what) {
  if (maps.L != maps.S)
    throw InputError(std::string(what) + " needs self-attention maps (L == S), got L=" + std::to_string(maps.L) +
                     ", S=" + std::to_string(maps.S));
}

// A_l for (layer, b): rownorm(0.5 * head mean + 0.5 * I).
Matrix residualMatrix(const MapStack& maps, int64_t layer, int64_t b) {
  const int64_t L = maps.L;
  Matrix a = Matrix::Zero(L, L);
  for (int64_t h = 0; h < maps.H; ++h) {
    const float* map = maps.map(layer, b, h);  // [L, L]
    for (int64_t k = 0; k < L * L; ++k) a.data()[k] += map[k];
  }
  a *= 0.5 / static_cast<double>(maps.H);
  a.diagonal().array() += 0.5;
  for (int64_t i = 0; i < L; ++i) a.row(i) /= a.row(i).sum();  // sum >= 0.5
  return a;
}

// out: [layers, B, L, L]; stores m as (layer, b).
void store(Tensor& out, int64_t layer, int64_t b, int64_t B, const Matrix& m) {
  const int64_t LL = m.size();
  float* dst = out.data.data() + (layer * B + b) * LL;
  for (int64_t k = 0; k < LL; ++k) dst[k] = static_cast<float>(m.data()[k]);
}

// Dinic's maximum flow on an edge list; capacities can be reset between runs.
class FlowGraph {
 public:
  explicit FlowGraph(int64_t nodes) : first_(static_cast<size_t>(nodes), -1), level_(first_.size()), next_edge_(first_.size()) {}

  void addEdge(int64_t from, int64_t to, double capacity) {
    edges_.push_back({to, first_[from], capacity, capacity});
    first_[from] = static_cast<int64_t>(edges_.size()) - 1;
    edges_.push_back({from, first_[to], 0.0, 0.0});
    first_[to] = static_cast<int64_t>(edges_.size()) - 1;
  }

  double run(int64_t source, int64_t sink) {
    for (Edge& e : edges_) e.residual = e.capacity;
    double total = 0;
    while (levels(source, sink)) {
      std::copy(first_.begin(), first_.end(), next_edge_.begin());
      while (const double pushed = push(source, sink, std::numeric_limits<double>::infinity())) total += pushed;
    }
    return total;
  }

 private:
  struct Edge {
    int64_t to, next;  // next: the following edge out of the same node (-1 = last)
    double capacity, residual;
  };
  // Residual capacities below this are spent (sums of float probabilities).
  static constexpr double kEps = 1e-12;

  bool levels(int64_t source, int64_t sink) {
    std::fill(level_.begin(), level_.end(), -1);
    std::queue<int64_t> queue;
    level_[source] = 0;
    queue.push(source);
    while (!queue.empty()) {
      const int64_t u = queue.front();
      queue.pop();
      for (int64_t e = first_[u]; e >= 0; e = edges_[e].next) {
        const Edge& edge = edges_[e];
        if (edge.residual > kEps && level_[edge.to] < 0) {
          level_[edge.to] = level_[u] + 1;
          queue.push(edge.to);
        }
      }
    }
    return level_[sink] >= 0;
  }

  double push(int64_t u, int64_t sink, double limit) {
    if (u == sink) return limit;
    for (int64_t& e = next_edge_[u]; e >= 0; e = edges_[e].next) {
      Edge& edge = edges_[e];
      if (edge.residual <= kEps || level_[edge.to] != level_[u] + 1) continue;
      const double pushed = push(edge.to, sink, std::min(limit, edge.residual));
      if (pushed > 0) {
        edge.residual -= pushed;
        edges_[e ^ 1].residual += pushed;
        return pushed;
      }
    }
    return 0;
  }

  std::vector<Edge> edges_;
  std::vector<int64_t> first_, level_, next_edge_;
};

}  // namespace

Tensor residualAttention(const MapStack& maps) {
  checkSelfAttention(maps, "residual attention");
  Tensor out({maps.layers, maps.B, maps.L, maps.L});
  for (int64_t layer = 0; layer < maps.layers; ++layer)
    for (int64_t b = 0; b < maps.B; ++b) store(out, layer, b, maps.B, residualMatrix(maps, layer, b));
  return out;
}

Tensor attentionRollout(const MapStack& maps) {
  checkSelfAttention(maps, "attention rollout");
  Tensor out({maps.layers, maps.B, maps.L, maps.L});
  for (int64_t b = 0; b < maps.B; ++b) {
    Matrix rollout = Matrix::Identity(maps.L, maps.L);
    for (int64_t layer = 0; layer < maps.layers; ++layer) {
      rollout = residualMatrix(maps, layer, b) * rollout;
      store(out, layer, b, maps.B, rollout);
    }
  }
  return out;
}

double maxFlow(const std::vector<double>& capacity, int64_t nodes, int64_t source, int64_t sink) {
  FlowGraph graph(nodes);
  for (int64_t u = 0; u < nodes; ++u)
    for (int64_t v = 0; v < nodes; ++v)
      if (capacity[u * nodes + v] > 0) graph.addEdge(u, v, capacity[u * nodes + v]);
  return graph.run(source, sink);
}

Tensor attentionFlow(const MapStack& maps, const Progress& progress) {
  checkSelfAttention(maps, "attention flow");
  const int64_t L = maps.L, layers = maps.layers, B = maps.B;
  Tensor out({layers, B, L, L});
  std::vector<Matrix> residual;  // [B * layers], index b * layers + layer
  for (int64_t b = 0; b < B; ++b)
    for (int64_t layer = 0; layer < layers; ++layer) residual.push_back(residualMatrix(maps, layer, b));

  // Work items (b, layer, i): one source, L sinks each; deeper layers cost more.
  const int64_t items = B * layers * L;
  std::atomic<bool> cancelled{false};
  int64_t done = 0;
#pragma omp parallel for schedule(dynamic)
  for (int64_t item = 0; item < items; ++item) {
    if (cancelled.load()) continue;
    const int64_t b = item / (layers * L), layer = item / L % layers, i = item % L;
    // Nodes: (k, a) -> k * L + a for k = 0 (input tokens) .. layer + 1 (after this layer).
    FlowGraph graph((layer + 2) * L);
    for (int64_t k = 0; k <= layer; ++k) {
      const Matrix& a = residual[b * layers + k];
      for (int64_t from = 0; from < L; ++from)
        for (int64_t to = 0; to < L; ++to)
          if (a(from, to) > 0) graph.addEdge((k + 1) * L + from, k * L + to, a(from, to));
    }
    std::vector<double> row(static_cast<size_t>(L));
    double sum = 0;
    for (int64_t j = 0; j < L; ++j) sum += row[j] = graph.run((layer + 1) * L + i, j);
    float* dst = out.data.data() + ((layer * B + b) * L + i) * L;
    for (int64_t j = 0; j < L; ++j) dst[j] = sum > 0 ? static_cast<float>(row[j] / sum) : 0.0f;
    // One caller at a time, in order: the callback need not be thread-safe.
#pragma omp critical(attention_flow_progress)
    {
      const int64_t finished = ++done;
      if (progress && !progress(static_cast<double>(finished) / static_cast<double>(items))) cancelled = true;
    }
  }
  if (cancelled) throw Cancelled();
  return out;
}

}  // namespace attnscope
