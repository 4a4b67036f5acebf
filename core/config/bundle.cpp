// Tensor bundles: reads a directory of .npy files into AttentionInputs, checking every
// shape against query.npy / key.npy with messages that name the file.
#include "config/bundle.h"

#include <filesystem>

#include "tensor/npy.h"
#include "tensor/text_file.h"
#include "config/text_input.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& file, const std::string& problem) {
  throw InputError(file + ": " + problem);
}

bool fileExists(const fs::path& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

// [L, X] -> [1, L, X]; [B, L, X] kept; anything else is an error naming `expected`.
Tensor readSequence(const fs::path& path, const char* expected) {
  Tensor t = readNpyFloat(path.string());
  if (t.shape.size() == 2) t.shape.insert(t.shape.begin(), 1);
  if (t.shape.size() != 3)
    fail(path.string(), std::string("expected ") + expected + ", got " + shapeToString(t.shape));
  for (int64_t dim : t.shape)
    if (dim < 1) fail(path.string(), std::string("expected ") + expected + " with no empty axis, got " + shapeToString(t.shape));
  return t;
}

std::vector<std::string> readLabels(const fs::path& path, int64_t expected_count, const char* what) {
  std::vector<std::string> labels = readLines(path.string(), kMaxLabelBytes, "a token list");
  // A trailing empty line is the final newline of the last label, not a label.
  while (!labels.empty() && labels.back().empty() && static_cast<int64_t>(labels.size()) > expected_count)
    labels.pop_back();
  if (static_cast<int64_t>(labels.size()) != expected_count)
    fail(path.string(), std::to_string(labels.size()) + " labels but " + what + " " +
                            std::to_string(expected_count));
  return labels;
}

}  // namespace

nlohmann::json readJsonFile(const std::string& path, size_t max_bytes, const std::string& what) {
  const std::string text = readSmallFile(path, max_bytes, what);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    std::string why = e.what();
    // nlohmann messages start with "[json.exception.parse_error.101] "; keep the human part.
    const size_t bracket = why.find("] ");
    if (bracket != std::string::npos) why = why.substr(bracket + 2);
    fail(path, "not valid JSON (" + why + ")");
  }
}

nlohmann::json readBundleMeta(const std::string& dir) {
  const fs::path path = fs::path(dir) / "bundle.json";
  if (!fileExists(path)) return nlohmann::json::object();
  const nlohmann::json meta = readJsonFile(path.string(), 16u << 20, "a bundle.json");
  if (!meta.is_object()) fail(path.string(), "expected a JSON object");
  if (meta.contains("d_model")) {
    const auto& d = meta["d_model"];
    if (!d.is_number_integer() || d.get<int64_t>() < 1)
      fail(path.string(), "\"d_model\" must be a positive integer");
  }
  return meta;
}

namespace {

// The files of one bundle directory, by name.
struct BundleFiles {
  fs::path root;
  fs::path file(const char* name) const { return root / name; }
  std::string name(const char* file_name) const { return file(file_name).string(); }
  bool has(const char* file_name) const { return fileExists(file(file_name)); }
};

// query.npy, and key.npy / value.npy (both or neither: self-attention on query).
// Returns whether key/value were given.
bool readSequences(const BundleFiles& files, AttentionInputs& in) {
  if (!files.has("query.npy")) fail(files.name("query.npy"), "missing (every bundle needs query.npy [B, L, Dq])");
  in.query = readSequence(files.file("query.npy"), "[B, L, Dq] or [L, Dq]");
  const int64_t B = in.query.shape[0];
  const bool has_key = files.has("key.npy"), has_value = files.has("value.npy");
  if (has_key != has_value)
    fail(files.name(has_key ? "value.npy" : "key.npy"),
         std::string("missing (") + (has_key ? "key.npy" : "value.npy") +
             " is present; give both key.npy and value.npy, or neither for self-attention)");
  if (!has_key) {
    in.key = in.query;
    in.value = in.query;
    return false;
  }
  in.key = readSequence(files.file("key.npy"), "[B, S, Dk]");
  in.value = readSequence(files.file("value.npy"), "[B, S, Dv]");
  if (in.key.shape[0] != B)
    fail(files.name("key.npy"), "expected [B, S, Dk] with B=" + std::to_string(B) + " like query.npy, got " +
                                    shapeToString(in.key.shape));
  if (in.value.shape[0] != B)
    fail(files.name("value.npy"), "expected [B, S, Dv] with B=" + std::to_string(B) + " like query.npy, got " +
                                      shapeToString(in.value.shape));
  if (in.value.shape[1] != in.key.shape[1])
    fail(files.name("value.npy"), "expected [B, S, Dv] with S=" + std::to_string(in.key.shape[1]) +
                                      " like key.npy (key and value lengths must match), got " +
                                      shapeToString(in.value.shape));
  return true;
}

const char* const kWeightNames[] = {"w_q.npy", "w_k.npy", "w_v.npy", "w_o.npy"};

// Whether the bundle gives weights: all four or none (a missing one among the others is an error).
bool hasAllWeights(const BundleFiles& files) {
  const char* first_present = nullptr;
  for (const char* w : kWeightNames)
    if (!first_present && files.has(w)) first_present = w;
  if (!first_present) return false;
  for (const char* w : kWeightNames)
    if (!files.has(w))
      fail(files.name(w), std::string("missing (") + first_present +
                              " is present; give all four weights w_q/w_k/w_v/w_o, or none for seeded defaults)");
  return true;
}

// w_q/w_k/w_v/w_o checked against the inputs' widths and bundle.json's d_model.
// Returns the rows of w_k and w_v: D, or G*d for grouped-query attention.
int64_t readWeights(const BundleFiles& files, const nlohmann::json& meta, AttentionInputs& in) {
  const int64_t Dq = in.query.shape[2], Dk = in.key.shape[2], Dv = in.value.shape[2];
  in.w_q = readNpyFloat(files.name("w_q.npy"));
  if (in.w_q.shape.size() != 2 || in.w_q.shape[1] != Dq || in.w_q.shape[0] < 1)
    fail(files.name("w_q.npy"), "expected [D, Dq] with Dq=" + std::to_string(Dq) + " like query.npy, got " +
                                    shapeToString(in.w_q.shape));
  const int64_t D = in.w_q.shape[0];
  // K/V projections may be [G*d, Dk] (grouped-query attention): any row count up to D
  // here, the same for w_k and w_v; the core checks it against H (a multiple of d).
  in.w_k = readNpyFloat(files.name("w_k.npy"));
  if (in.w_k.shape.size() != 2 || in.w_k.shape[1] != Dk || in.w_k.shape[0] < 1 || in.w_k.shape[0] > D)
    fail(files.name("w_k.npy"), "expected [D, Dk] = " + shapeToString({D, Dk}) + ", got " +
                                    shapeToString(in.w_k.shape) + " (or [G*d, Dk] for grouped-query attention)");
  const int64_t kv_rows = in.w_k.shape[0];
  auto check_weight = [&](Tensor& w, const char* file_name, int64_t rows, int64_t cols, const std::string& expected) {
    w = readNpyFloat(files.name(file_name));
    if (w.shape != Shape{rows, cols})
      fail(files.name(file_name), "expected " + expected + " = " + shapeToString({rows, cols}) + ", got " +
                                      shapeToString(w.shape));
  };
  check_weight(in.w_v, "w_v.npy", kv_rows, Dv, kv_rows == D ? "[D, Dv]" : "[G*d, Dv] like w_k.npy");
  check_weight(in.w_o, "w_o.npy", D, D, "[D, D]");
  if (meta.contains("d_model") && meta["d_model"].get<int64_t>() != D)
    fail(files.name("bundle.json"), "\"d_model\" " + std::to_string(meta["d_model"].get<int64_t>()) +
                                        " does not match w_q.npy " + shapeToString(in.w_q.shape));
  return kv_rows;
}

// Biases: each optional, [D] ([G*d] like w_k for b_k and b_v); only with weights.
void readBiases(const BundleFiles& files, bool has_weights, int64_t D, int64_t kv_rows, AttentionInputs& in) {
  const char* bias_names[] = {"b_q.npy", "b_k.npy", "b_v.npy", "b_o.npy"};
  Tensor* biases[] = {&in.b_q, &in.b_k, &in.b_v, &in.b_o};
  for (int i = 0; i < 4; ++i) {
    if (!files.has(bias_names[i])) continue;
    if (!has_weights) fail(files.name(bias_names[i]), "a bias needs the weights w_q/w_k/w_v/w_o.npy in the bundle too");
    *biases[i] = readNpyFloat(files.name(bias_names[i]));
    const bool kv = i == 1 || i == 2;
    const int64_t rows = kv ? kv_rows : D;
    if (biases[i]->shape != Shape{rows})
      fail(files.name(bias_names[i]), std::string("expected ") + (kv && rows != D ? "[G*d] like w_k.npy" : "[D]") +
                                          " = " + shapeToString({rows}) + ", got " + shapeToString(biases[i]->shape));
  }
}

// attn_mask.npy [L, S] or [B, L, S], key_padding.npy [B, S], valid_lens.npy [B] in 0..S.
void readMasks(const BundleFiles& files, int64_t B, int64_t L, int64_t S, AttentionInputs& in) {
  if (files.has("attn_mask.npy")) {
    in.attn_mask = readNpyBool(files.name("attn_mask.npy"));
    const Shape& m = in.attn_mask.shape;
    if (m != Shape{L, S} && m != Shape{B, L, S})
      fail(files.name("attn_mask.npy"), "expected [L, S] = " + shapeToString({L, S}) + " or [B, L, S] = " +
                                            shapeToString({B, L, S}) + ", got " + shapeToString(m));
  }
  if (files.has("key_padding.npy")) {
    in.key_padding = readNpyBool(files.name("key_padding.npy"));
    if (in.key_padding.shape != Shape{B, S})
      fail(files.name("key_padding.npy"), "expected [B, S] = " + shapeToString({B, S}) + ", got " +
                                              shapeToString(in.key_padding.shape));
  }
  if (files.has("valid_lens.npy")) {
    in.valid_lens = readNpyInt(files.name("valid_lens.npy"));
    if (static_cast<int64_t>(in.valid_lens.size()) != B)
      fail(files.name("valid_lens.npy"), "expected [B] = " + shapeToString({B}) + ", got " +
                                             shapeToString({static_cast<int64_t>(in.valid_lens.size())}));
    for (size_t b = 0; b < in.valid_lens.size(); ++b)
      if (in.valid_lens[b] < 0 || in.valid_lens[b] > S)
        fail(files.name("valid_lens.npy"), "value " + std::to_string(in.valid_lens[b]) + " at index " +
                                               std::to_string(b) + " is outside 0..S=" + std::to_string(S));
  }
}

// tokens.txt [L] and key_tokens.txt [S]; self-attention keys default to the query's labels.
void readTokenLabels(const BundleFiles& files, int64_t L, int64_t S, bool has_key, AttentionInputs& in) {
  if (files.has("tokens.txt")) in.query_tokens = readLabels(files.file("tokens.txt"), L, "query.npy has L =");
  if (files.has("key_tokens.txt")) {
    in.key_tokens = readLabels(files.file("key_tokens.txt"), S, has_key ? "key.npy has S =" : "query.npy has S = L =");
  } else if (!has_key) {
    in.key_tokens = in.query_tokens;
  }
}

}  // namespace

Bundle loadBundle(const std::string& dir, int64_t default_model_dim, uint64_t seed) {
  const BundleFiles files{fs::path(dir)};
  std::error_code ec;
  if (!fs::is_directory(files.root, ec)) fail(dir, fileExists(files.root) ? "not a directory" : "no such bundle directory");

  Bundle bundle;
  bundle.meta = readBundleMeta(dir);
  AttentionInputs& in = bundle.inputs;
  const bool has_key = readSequences(files, in);
  const int64_t B = in.query.shape[0], L = in.query.shape[1], S = in.key.shape[1];

  int64_t kv_rows = 0;  // rows of w_k and w_v: D, or G*d for grouped-query attention
  bundle.has_weights = hasAllWeights(files);
  if (bundle.has_weights) kv_rows = readWeights(files, bundle.meta, in);
  const bool has_meta_d = bundle.meta.contains("d_model");
  const int64_t D = bundle.has_weights ? in.w_q.shape[0]
                                       : (has_meta_d ? bundle.meta["d_model"].get<int64_t>() : default_model_dim);
  readBiases(files, bundle.has_weights, D, kv_rows, in);
  if (!bundle.has_weights)
    seedDefaultWeights(in, D, in.query.shape[2], in.key.shape[2], in.value.shape[2], /*bias=*/false, seed);

  readMasks(files, B, L, S, in);
  readTokenLabels(files, L, S, has_key, in);
  return bundle;
}

}  // namespace attnscope
