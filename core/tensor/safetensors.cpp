#include "tensor/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include <Eigen/Core>
#include <nlohmann/json.hpp>

#include "tensor/mapped_file.h"
#include "tensor/text_file.h"

namespace attnscope {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The format's dtypes and their sizes (safetensors' Dtype enum).
struct DtypeRow {
  const char* name;
  uint64_t bytes;
};
constexpr DtypeRow kDtypes[] = {
    {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
    {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"F64", 8},     {"I64", 8}, {"U64", 8},
};
constexpr const char* kReadable = "F32, F16, BF16";

// The JSON header is small (real checkpoints: tens of KiB per shard); a larger length field
// is a damaged file, not a header to parse.
constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;
constexpr size_t kMaxIndexBytes = size_t{64} << 20;
constexpr int64_t kMaxDims = 8;

[[noreturn]] void fail(const std::string& path, const std::string& why) { throw InputError(path + ": " + why); }

std::string shortName(const std::string& name) {
  std::string out;
  for (char c : name.substr(0, 200)) out += (static_cast<unsigned char>(c) < 0x20) ? '?' : c;
  return out;
}

uint64_t readLength(const uint8_t* p) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | p[i];
  return n;
}

// Shape [dims...] with every dimension a non-negative integer; numel checked for overflow.
Shape readShape(const json& v, const std::string& path, const std::string& tensor) {
  if (!v.is_array() || static_cast<int64_t>(v.size()) > kMaxDims)
    fail(path, "tensor \"" + tensor + "\": \"shape\" must be a list of at most 8 integers");
  Shape shape;
  uint64_t count = 1;
  for (const json& dim : v) {
    if (!dim.is_number_unsigned() || dim.get<uint64_t>() > (uint64_t{1} << 40))
      fail(path, "tensor \"" + tensor + "\": \"shape\" must hold non-negative integers");
    const uint64_t n = dim.get<uint64_t>();
    if (n != 0 && count > (uint64_t{1} << 62) / n) fail(path, "tensor \"" + tensor + "\": shape too large");
    count *= n;
    shape.push_back(static_cast<int64_t>(n));
  }
  return shape;
}

SafetensorsEntry readEntry(const json& v, const std::string& path, const std::string& tensor) {
  if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
    fail(path, "tensor \"" + tensor + "\" must be an object with \"dtype\", \"shape\" and \"data_offsets\"");
  SafetensorsEntry e;
  if (!v["dtype"].is_string()) fail(path, "tensor \"" + tensor + "\": \"dtype\" must be a string");
  e.dtype = v["dtype"].get<std::string>();
  const uint64_t elem = safetensorsDtypeBytes(e.dtype);
  if (elem == 0)
    fail(path, "tensor \"" + tensor + "\": unknown dtype \"" + shortName(e.dtype) + "\" (attnscope reads " + kReadable + ")");
  e.shape = readShape(v["shape"], path, tensor);
  const json& off = v["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    fail(path, "tensor \"" + tensor + "\": \"data_offsets\" must be [begin, end] (non-negative integers)");
  e.begin = off[0].get<uint64_t>();
  e.end = off[1].get<uint64_t>();
  const uint64_t want = static_cast<uint64_t>(numel(e.shape)) * elem;
  if (e.begin <= e.end && e.end - e.begin != want)  // begin > end: out of range (checkDataRange)
    fail(path, "tensor \"" + tensor + "\": data_offsets span " + std::to_string(e.end - e.begin) + " bytes but " +
                   e.dtype + " " + shapeToString(e.shape) + " needs " + std::to_string(want));
  return e;
}

void checkOverlaps(const SafetensorsHeader& h, const std::string& path) {
  std::vector<std::pair<const std::string*, const SafetensorsEntry*>> order;
  for (const auto& [name, e] : h.tensors)
    if (e.end > e.begin) order.push_back({&name, &e});
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second->begin < b.second->begin; });
  for (size_t i = 1; i < order.size(); ++i)
    if (order[i].second->begin < order[i - 1].second->end)
      fail(path, "tensors \"" + *order[i - 1].first + "\" and \"" + *order[i].first + "\" have overlapping data_offsets");
}

}  // namespace

uint64_t safetensorsDtypeBytes(const std::string& dtype) {
  for (const DtypeRow& row : kDtypes)
    if (dtype == row.name) return row.bytes;
  return 0;
}

namespace {

// The header's length field, checked against the file's size.
uint64_t headerLength(const uint8_t* first8, uint64_t size, const std::string& path) {
  if (size < 8) fail(path, "truncated: " + std::to_string(size) + " bytes, but a safetensors file starts with an 8-byte header length");
  const uint64_t n = readLength(first8);
  if (n > size - 8)
    fail(path, "header length " + std::to_string(n) + " goes beyond the file (" + std::to_string(size) + " bytes): truncated or not safetensors");
  if (n > kMaxHeaderBytes) fail(path, "header length " + std::to_string(n) + " is over the 100 MiB a safetensors header may have");
  return n;
}

// The n bytes of JSON after the length field: every entry checked, except that its data
// lies inside the file (checkDataRange).
SafetensorsHeader parseHeaderJson(const uint8_t* text, uint64_t n, const std::string& path) {
  json j;
  try {
    j = json::parse(text, text + n);
  } catch (const json::exception&) {
    fail(path, "the header is not valid JSON (not a safetensors file?)");
  }
  if (!j.is_object()) fail(path, "the header must be a JSON object {name: {dtype, shape, data_offsets}}");
  SafetensorsHeader h;
  h.data_start = 8 + n;
  for (const auto& [name, v] : j.items()) {
    if (name == "__metadata__") continue;
    h.tensors.emplace(name, readEntry(v, path, name));
  }
  checkOverlaps(h, path);
  return h;
}

// Every tensor's data lies inside a file of file_size bytes. A file shorter than its header
// says is truncated (an interrupted download or copy): the message gives both sizes.
void checkDataRange(const SafetensorsHeader& h, uint64_t file_size, const std::string& path) {
  const std::string* last = nullptr;  // the tensor whose data ends last
  for (const auto& [name, e] : h.tensors) {
    if (e.begin > e.end)
      fail(path, "tensor \"" + name + "\": data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                     "] out of range (begin after end)");
    if (!last || e.end > h.tensors.at(*last).end) last = &name;
  }
  const uint64_t needed = h.data_start + (last ? h.tensors.at(*last).end : 0);
  if (file_size >= needed) return;
  const SafetensorsEntry& e = h.tensors.at(*last);
  fail(path, "truncated: " + std::to_string(file_size) + " bytes where its header needs " + std::to_string(needed) +
                 " (tensor \"" + *last + "\": data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                 "] end past the " + std::to_string(file_size > h.data_start ? file_size - h.data_start : 0) +
                 " bytes of data): an unfinished download or copy?");
}

}  // namespace

SafetensorsHeader parseSafetensorsHeader(const uint8_t* bytes, uint64_t size, const std::string& path) {
  const uint64_t n = headerLength(bytes, size, path);
  SafetensorsHeader h = parseHeaderJson(bytes + 8, n, path);
  checkDataRange(h, size, path);
  return h;
}

namespace {

// out[0, n) = the values at p in `dtype` (F32, F16 or BF16); the index of the first value
// that is not finite, or n.
uint64_t convertValues(const uint8_t* p, bool f32, bool bf16, uint64_t n, float* out) {
  if (f32) {
    std::memcpy(out, p, n * sizeof(float));  // little-endian host (x86-64, arm64)
  } else {
    for (uint64_t i = 0; i < n; ++i) {
      const uint16_t bits = static_cast<uint16_t>(p[2 * i] | (p[2 * i + 1] << 8));
      if (bf16) {
        const uint32_t wide = static_cast<uint32_t>(bits) << 16;
        std::memcpy(&out[i], &wide, sizeof wide);
      } else {
        out[i] = static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(bits));
      }
    }
  }
  for (uint64_t i = 0; i < n; ++i)
    if (!std::isfinite(out[i])) return i;
  return n;
}

bool finiteBf16(uint16_t bits) { return (bits & 0x7F80u) != 0x7F80u; }  // exponent all ones: infinite or NaN

// Pieces of 1 Mi values of [0, n) across the threads (a model's load is mostly these passes
// over its weights): piece(begin, end) returns the first bad index in it or `end`; the
// smallest over all pieces, or n.
template <class Piece>
uint64_t firstBadInPieces(uint64_t n, const Piece& piece) {
  constexpr uint64_t kPiece = uint64_t{1} << 20;
  const int64_t pieces = static_cast<int64_t>((n + kPiece - 1) / kPiece);
  uint64_t first_bad = n;
#pragma omp parallel for schedule(dynamic) reduction(min : first_bad) if (pieces > 1)
  for (int64_t q = 0; q < pieces; ++q) {
    const uint64_t begin = static_cast<uint64_t>(q) * kPiece, end = std::min(n, begin + kPiece);
    const uint64_t bad = piece(begin, end);
    if (bad < end) first_bad = std::min(first_bad, bad);
  }
  return first_bad;
}

void failIfAt(uint64_t first_bad, uint64_t n, const std::string& path, const std::string& name) {
  if (first_bad < n)
    fail(path, "tensor \"" + name + "\" holds a NaN or infinite value at index " + std::to_string(first_bad));
}

// InputError naming the first of n values for which finite(i) is false.
template <class Finite>
void checkFinite(uint64_t n, const std::string& path, const std::string& name, const Finite& finite) {
  failIfAt(firstBadInPieces(n, [&](uint64_t begin, uint64_t end) {
             for (uint64_t i = begin; i < end; ++i)
               if (!finite(i)) return i;
             return end;
           }), n, path, name);
}

}  // namespace

void convertSafetensor(const uint8_t* file_bytes, const SafetensorsHeader& header, const std::string& name,
                       const std::string& path, float* out) {
  const SafetensorsEntry& e = header.tensors.at(name);
  if (e.dtype != "F32" && e.dtype != "F16" && e.dtype != "BF16")
    fail(path, "tensor \"" + name + "\" has dtype " + e.dtype + "; attnscope reads " + kReadable);
  const uint8_t* p = file_bytes + header.data_start + e.begin;
  const uint64_t n = static_cast<uint64_t>(numel(e.shape)), bytes = e.dtype == "F32" ? 4 : 2;
  failIfAt(firstBadInPieces(n, [&](uint64_t begin, uint64_t end) {
             return begin + convertValues(p + begin * bytes, bytes == 4, e.dtype == "BF16", end - begin, out + begin);
           }), n, path, name);
}

// ---- files and folders ----


namespace {

// n bytes at offset of an open file; InputError naming the file when it cannot be read.
std::vector<uint8_t> readAt(int fd, uint64_t offset, uint64_t n, const std::string& path) {
  std::vector<uint8_t> bytes(n);
  uint64_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, bytes.data() + done, n - done, static_cast<off_t>(offset + done));
    if (got <= 0) fail(path, got < 0 ? std::string("cannot read (") + std::strerror(errno) + ")" : "truncated while reading the header");
    done += static_cast<uint64_t>(got);
  }
  return bytes;
}

// The header of a file, read with two small reads (length, JSON): nothing past it.
SafetensorsHeader readHeaderOnly(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, std::string("cannot open (") + std::strerror(errno) + ")");
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) fail(path, "not a regular file");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  const std::vector<uint8_t> length = readAt(fd, 0, std::min<uint64_t>(size, 8), path);
  const uint64_t n = headerLength(length.data(), size, path);
  return parseHeaderJson(readAt(fd, 8, n, path).data(), n, path);
}

}  // namespace

// A file's header, read when the folder opens; its data mapped only by mapData().
struct SafetensorsFolder::Shard {
  explicit Shard(std::string file_path) : path(std::move(file_path)), header(readHeaderOnly(path)) {}
  void map() {
    if (file) return;
    auto mapped = std::make_unique<MappedFile>(path);
    checkDataRange(header, mapped->size(), path);
    file = std::move(mapped);
  }
  std::string path;
  SafetensorsHeader header;
  std::unique_ptr<MappedFile> file;  // null until mapped
};

SafetensorsFolder::SafetensorsFolder() = default;
SafetensorsFolder::~SafetensorsFolder() = default;
SafetensorsFolder::SafetensorsFolder(SafetensorsFolder&&) noexcept = default;
SafetensorsFolder& SafetensorsFolder::operator=(SafetensorsFolder&&) noexcept = default;

namespace {

// weight_map of an index file: tensor name -> shard file name (a plain name in the folder).
std::map<std::string, std::string> readWeightMap(const std::string& index) {
  json j;
  try {
    j = json::parse(readSmallFile(index, kMaxIndexBytes, "a safetensors index"));
  } catch (const json::exception&) {
    fail(index, "not valid JSON");
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    fail(index, "\"weight_map\" is missing (it maps each tensor name to its shard file)");
  std::map<std::string, std::string> map;
  for (const auto& [name, file] : j["weight_map"].items()) {
    if (!file.is_string()) fail(index, "\"weight_map\": tensor \"" + name + "\" must name a file");
    const std::string f = file.get<std::string>();
    if (f.empty() || f.find('/') != std::string::npos || f == "." || f == "..")
      fail(index, "\"weight_map\": tensor \"" + name + "\" names \"" + shortName(f) + "\", not a file in the folder");
    map[name] = f;
  }
  return map;
}

// A folder with PyTorch's weights only (pytorch_model.bin, or its shards' index): those are
// pickles, which attnscope does not read (unpickling runs code); say how to write safetensors.
void refusePickles(const std::string& folder) {
  std::error_code ec;
  for (const char* name : {"pytorch_model.bin", "pytorch_model.bin.index.json"}) {
    const fs::path pickle = fs::path(folder) / name;
    if (fs::exists(pickle, ec))
      fail(pickle.string(), "PyTorch pickles are not read, only safetensors: write them with "
                            "model.save_pretrained(\"" + folder + "\", safe_serialization=True) (model.safetensors)");
  }
}

}  // namespace

SafetensorsFolder SafetensorsFolder::open(const std::string& folder) {
  SafetensorsFolder out;
  const fs::path index = fs::path(folder) / "model.safetensors.index.json";
  std::error_code ec;
  if (!fs::exists(index, ec)) {
    const fs::path single = fs::path(folder) / "model.safetensors";
    if (!fs::exists(single, ec)) {
      refusePickles(folder);
      fail(single.string(), "missing (a Hugging Face model folder needs model.safetensors or model.safetensors.index.json)");
    }
    out.shards_.push_back(std::make_unique<Shard>(single.string()));
    for (const auto& [name, e] : out.shards_[0]->header.tensors) out.where_[name] = 0;
    out.describe_ = single.string();
    return out;
  }
  out.describe_ = index.string();
  std::map<std::string, size_t> shard_of_file;
  for (const auto& [name, file] : readWeightMap(index.string())) {
    auto [it, added] = shard_of_file.emplace(file, out.shards_.size());
    if (added) {
      const fs::path path = fs::path(folder) / file;
      if (!fs::exists(path, ec)) fail(path.string(), "missing (listed in " + index.string() + ")");
      out.shards_.push_back(std::make_unique<Shard>(path.string()));
    }
    const Shard& shard = *out.shards_[it->second];
    if (!shard.header.tensors.count(name))
      fail(shard.path, "tensor \"" + name + "\" is missing (" + index.string() + " lists it in this file)");
    out.where_[name] = it->second;
  }
  return out;
}

void SafetensorsFolder::checkSizes() const {
  for (const std::unique_ptr<Shard>& shard : shards_) {
    std::error_code ec;
    const uint64_t size = fs::file_size(shard->path, ec);
    if (ec) fail(shard->path, "cannot read its size (" + ec.message() + ")");
    checkDataRange(shard->header, size, shard->path);
  }
}

void SafetensorsFolder::mapData() {
  for (const std::unique_ptr<Shard>& shard : shards_) shard->map();
}

bool SafetensorsFolder::has(const std::string& name) const { return where_.count(name) > 0; }

const SafetensorsEntry& SafetensorsFolder::entry(const std::string& name) const {
  return shards_[where_.at(name)]->header.tensors.at(name);
}

std::string SafetensorsFolder::fileOf(const std::string& name) const { return shards_[where_.at(name)]->path; }

std::string SafetensorsFolder::describe() const { return describe_; }

void SafetensorsFolder::checkShape(const std::string& name, const Shape& shape, const std::string& why) const {
  if (!has(name)) fail(describe_, "tensor \"" + name + "\" is missing (" + why + ")");
  const SafetensorsEntry& e = entry(name);
  if (e.shape != shape)
    fail(fileOf(name), "tensor \"" + name + "\" has shape " + shapeToString(e.shape) + " but config.json needs " +
                           shapeToString(shape) + " (" + why + ")");
}

Tensor SafetensorsFolder::read(const std::string& name, const Shape& shape, const std::string& why) const {
  checkShape(name, shape, why);
  const Shard& shard = *shards_[where_.at(name)];
  if (!shard.file) throw std::logic_error("SafetensorsFolder::read before mapData()");
  Tensor t;
  t.shape = shape;
  resizePrefaulted(t.data, static_cast<size_t>(numel(shape)), std::nullopt);  // every value converted below
  convertSafetensor(shard.file->data(), shard.header, name, shard.path, t.data.data());
  const SafetensorsEntry& e = shard.header.tensors.at(name);
  shard.file->release(shard.header.data_start + e.begin, shard.header.data_start + e.end);
  return t;
}

Weights SafetensorsFolder::readWeights(const std::string& name, const Shape& shape, const std::string& why,
                                       bool panels) const {
  checkShape(name, shape, why);
  const Shard& shard = *shards_[where_.at(name)];
  const SafetensorsEntry& e = shard.header.tensors.at(name);
  if (e.dtype != "BF16") {
    Weights w(read(name, shape, why));
    if (panels) packPanels(w);
    return w;
  }
  if (!shard.file) throw std::logic_error("SafetensorsFolder::readWeights before mapData()");
  const uint8_t* p = shard.file->data() + shard.header.data_start + e.begin;
  const size_t n = static_cast<size_t>(numel(shape));
  std::vector<uint16_t> copy;  // only for an odd offset (the format does not promise alignment)
  if (reinterpret_cast<uintptr_t>(p) % alignof(uint16_t) != 0) {
    copy.resize(n);
    std::memcpy(copy.data(), p, n * sizeof(uint16_t));
  }
  // little-endian host (x86-64, arm64)
  const uint16_t* values = copy.empty() ? reinterpret_cast<const uint16_t*>(p) : copy.data();
  checkFinite(n, shard.path, name, [values](uint64_t i) { return finiteBf16(values[i]); });
  Weights w;
  if (panels) {
    packPanelsFrom(values, shape.at(0), shape.at(1), w);
  } else {
    w.shape = shape;
    w.bf16.assign(values, values + n);
  }
  shard.file->release(shard.header.data_start + e.begin, shard.header.data_start + e.end);
  return w;
}

std::vector<Weights> SafetensorsFolder::readColumnPanels(const std::string& name, const Shape& shape,
                                                         const std::string& why, const std::vector<int64_t>& counts) const {
  checkShape(name, shape, why);
  const Shard& shard = *shards_[where_.at(name)];
  if (!shard.file) throw std::logic_error("SafetensorsFolder::readColumnPanels before mapData()");
  const SafetensorsEntry& e = shard.header.tensors.at(name);
  const int64_t K = shape.at(0), N = shape.at(1);
  std::vector<Weights> parts;
  const auto split = [&](const auto* kn) {
    int64_t first = 0;
    for (int64_t count : counts) {
      parts.push_back(panelsOfColumns(kn, K, N, first, count));
      first += count;
    }
    if (first != N) throw std::logic_error("readColumnPanels: the parts do not cover the columns");
  };
  const uint8_t* p = shard.file->data() + shard.header.data_start + e.begin;
  const uint64_t n = static_cast<uint64_t>(K * N);
  const auto aligned = [&](size_t alignment) { return reinterpret_cast<uintptr_t>(p) % alignment == 0; };
  if (e.dtype == "F32" && aligned(alignof(float))) {
    checkFinite(n, shard.path, name, [f = reinterpret_cast<const float*>(p)](uint64_t i) { return std::isfinite(f[i]); });
    split(reinterpret_cast<const float*>(p));
  } else if (e.dtype == "BF16" && aligned(alignof(uint16_t))) {
    checkFinite(n, shard.path, name, [b = reinterpret_cast<const uint16_t*>(p)](uint64_t i) { return finiteBf16(b[i]); });
    split(reinterpret_cast<const uint16_t*>(p));
  } else {  // F16, or data the format left unaligned: through a float32 copy
    const Tensor t = read(name, shape, why);
    split(t.data.data());
  }
  shard.file->release(shard.header.data_start + e.begin, shard.header.data_start + e.end);
  return parts;
}

uint64_t SafetensorsFolder::residentBytes(const std::string& name, bool keep_bf16) const {
  const SafetensorsEntry& e = entry(name);
  return static_cast<uint64_t>(numel(e.shape)) * (keep_bf16 && e.dtype == "BF16" ? 2 : 4);
}

}  // namespace attnscope
