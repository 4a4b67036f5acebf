#include "tensor/gguf.h"

#include <cstring>
#include <limits>

#include "tensor/mapped_file.h"
#include "tensor/tensor.h"

namespace attnscope {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
constexpr int kMaxDims = 4;              // GGML_MAX_DIMS
constexpr int kMaxDepth = 16;            // nested arrays

struct TypeRow {
  GgufType type;
  const char* name;
  uint64_t bytes;  // fixed size; 0 for string / array
};
constexpr TypeRow kValueTypes[] = {
    {GgufType::U8, "UINT8", 1},   {GgufType::I8, "INT8", 1},      {GgufType::U16, "UINT16", 2},
    {GgufType::I16, "INT16", 2},  {GgufType::U32, "UINT32", 4},   {GgufType::I32, "INT32", 4},
    {GgufType::F32, "FLOAT32", 4}, {GgufType::Bool, "BOOL", 1},   {GgufType::String, "STRING", 0},
    {GgufType::Array, "ARRAY", 0}, {GgufType::U64, "UINT64", 8},  {GgufType::I64, "INT64", 8},
    {GgufType::F64, "FLOAT64", 8},
};

const TypeRow* valueType(uint32_t id) { return id < std::size(kValueTypes) ? &kValueTypes[id] : nullptr; }

// Reads the file's bytes front to back; every read checks the bytes left.
class Cursor {
 public:
  Cursor(const uint8_t* bytes, uint64_t size, const std::string& path) : b_(bytes), size_(size), path_(path) {}
  uint64_t at() const { return at_; }
  uint64_t left() const { return size_ - at_; }
  [[noreturn]] void fail(const std::string& why, uint64_t where) const {
    throw InputError(path_ + ": at byte " + std::to_string(where) + ": " + why);
  }
  void need(uint64_t n, const char* what) const {
    if (n > left())
      fail(std::string("truncated ") + what + " (needs " + std::to_string(n) + " bytes, the file has " +
               std::to_string(left()) + " more)",
           at_);
  }
  template <class T>
  T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, b_ + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  std::string string(const char* what) {
    const uint64_t start = at_;
    const uint64_t n = get<uint64_t>(what);
    if (n > left())
      fail(std::string(what) + ": string length " + std::to_string(n) + " runs past the end of the file (" +
               std::to_string(size_) + " bytes)",
           start);
    std::string s(reinterpret_cast<const char*>(b_ + at_), n);
    at_ += n;
    return s;
  }

 private:
  const uint8_t* b_;
  uint64_t size_, at_ = 0;
  const std::string& path_;
};

GgufValue readValue(Cursor& c, uint32_t type_id, int depth, const char* what);

// The fewest bytes an element of this type takes (a bound on an array's count).
uint64_t minimumBytes(const TypeRow& t) {
  if (t.type == GgufType::String) return 8;
  if (t.type == GgufType::Array) return 12;
  return t.bytes;
}

GgufValue readArray(Cursor& c, int depth, const char* what) {
  const uint64_t start = c.at();
  if (depth >= kMaxDepth) c.fail(std::string(what) + ": arrays nested deeper than " + std::to_string(kMaxDepth), start);
  GgufValue v;
  v.type = GgufType::Array;
  const uint32_t elem = c.get<uint32_t>(what);
  const TypeRow* t = valueType(elem);
  if (!t) c.fail(std::string(what) + ": unknown array element type " + std::to_string(elem), start);
  v.elem = t->type;
  const uint64_t count = c.get<uint64_t>(what);
  if (count > c.left() / minimumBytes(*t))
    c.fail(std::string(what) + ": array length " + std::to_string(count) + " runs past the end of the file", start);
  v.items.reserve(count);
  for (uint64_t k = 0; k < count; ++k) v.items.push_back(readValue(c, elem, depth + 1, what));
  return v;
}

GgufValue readValue(Cursor& c, uint32_t type_id, int depth, const char* what) {
  const TypeRow* t = valueType(type_id);
  if (!t) c.fail(std::string(what) + ": unknown value type " + std::to_string(type_id), c.at());
  if (t->type == GgufType::Array) return readArray(c, depth, what);
  GgufValue v;
  v.type = t->type;
  switch (t->type) {
    case GgufType::U8: v.u = c.get<uint8_t>(what); break;
    case GgufType::I8: v.i = c.get<int8_t>(what); break;
    case GgufType::U16: v.u = c.get<uint16_t>(what); break;
    case GgufType::I16: v.i = c.get<int16_t>(what); break;
    case GgufType::U32: v.u = c.get<uint32_t>(what); break;
    case GgufType::I32: v.i = c.get<int32_t>(what); break;
    case GgufType::U64: v.u = c.get<uint64_t>(what); break;
    case GgufType::I64: v.i = c.get<int64_t>(what); break;
    case GgufType::F32: v.f = c.get<float>(what); break;
    case GgufType::F64: v.f = c.get<double>(what); break;
    case GgufType::Bool: v.u = c.get<uint8_t>(what) != 0; break;
    default: v.s = c.string(what); break;  // String
  }
  return v;
}

void readMetadata(Cursor& c, uint64_t count, GgufHeader& h, const std::string& path) {
  for (uint64_t k = 0; k < count; ++k) {
    const uint64_t start = c.at();
    std::string key = c.string("metadata key");
    const uint32_t type = c.get<uint32_t>("metadata");
    GgufValue v = readValue(c, type, 0, ("metadata " + key).c_str());
    if (!h.metadata.emplace(key, std::move(v)).second) c.fail("metadata key " + key + " appears twice", start);
  }
  const auto a = h.metadata.find("general.alignment");
  if (a == h.metadata.end()) return;
  const GgufValue& v = a->second;
  const uint64_t align = v.isInteger() ? (v.i > 0 ? static_cast<uint64_t>(v.i) : v.u) : 0;
  if (align == 0 || (align & (align - 1)) != 0 || align > (uint64_t{1} << 30))
    throw InputError(path + ": metadata key general.alignment must be a power of two (up to 2^30)");
  h.alignment = align;
}

void readTensorInfo(Cursor& c, GgufHeader& h) {
  const uint64_t start = c.at();
  GgufTensorInfo t;
  t.name = c.string("tensor info");
  const std::string what = "tensor " + t.name;
  const uint32_t n_dims = c.get<uint32_t>("tensor info");
  if (n_dims < 1 || n_dims > kMaxDims)
    c.fail(what + " has " + std::to_string(n_dims) + " dimensions (1 to " + std::to_string(kMaxDims) + ")", start);
  uint64_t numel = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    const uint64_t n = c.get<uint64_t>("tensor info");
    if (n == 0 || n > (uint64_t{1} << 40) || numel > (uint64_t{1} << 50) / n)
      c.fail(what + " has dimension " + std::to_string(n) + " (too large, or 0)", start);
    numel *= n;
    t.dims.push_back(static_cast<int64_t>(n));
  }
  const uint32_t type = c.get<uint32_t>("tensor info");
  t.type = ggmlType(type);
  if (!t.type) c.fail(what + " has unknown ggml type " + std::to_string(type), start);
  if (t.dims[0] % t.type->block != 0)
    c.fail(what + " has rows of " + std::to_string(t.dims[0]) + " values, not a multiple of " + t.type->name +
               "'s block of " + std::to_string(t.type->block),
           start);
  t.bytes = numel / static_cast<uint64_t>(t.type->block) * t.type->bytes;
  t.offset = c.get<uint64_t>("tensor info");
  if (!h.by_name.emplace(t.name, h.tensors.size()).second) c.fail(what + " appears twice", start);
  h.tensors.push_back(std::move(t));
}

// Each tensor's data: aligned, inside the data section.
void checkData(const GgufHeader& h, uint64_t size, const std::string& path) {
  const uint64_t data = size - h.data_start;
  for (const GgufTensorInfo& t : h.tensors) {
    const std::string what = path + ": tensor " + t.name + "'s data offset " + std::to_string(t.offset);
    if (t.offset % h.alignment != 0)
      throw InputError(what + " is not a multiple of the alignment " + std::to_string(h.alignment));
    if (t.offset > data)
      throw InputError(what + " lies outside the data section (" + std::to_string(data) + " bytes from byte " +
                       std::to_string(h.data_start) + ")");
    if (t.bytes > data - t.offset)
      throw InputError(path + ": truncated data: tensor " + t.name + " ends at byte " +
                       std::to_string(h.data_start + t.offset + t.bytes) + " but the file has " +
                       std::to_string(size) + " bytes");
  }
}

}  // namespace

const char* ggufTypeName(GgufType type) {
  const TypeRow* t = valueType(static_cast<uint32_t>(type));
  return t ? t->name : "?";
}

bool GgufValue::isInteger() const {
  switch (type) {
    case GgufType::U8: case GgufType::I8: case GgufType::U16: case GgufType::I16: case GgufType::U32:
    case GgufType::I32: case GgufType::U64: case GgufType::I64:
      return true;
    default:
      return false;
  }
}

int64_t GgufTensorInfo::rows() const {
  int64_t n = 1;
  for (size_t d = 1; d < dims.size(); ++d) n *= dims[d];
  return n;
}

GgufHeader parseGguf(const uint8_t* bytes, uint64_t size, const std::string& path) {
  Cursor c(bytes, size, path);
  GgufHeader h;
  if (size < 4) c.fail("truncated header (not a GGUF file: " + std::to_string(size) + " bytes)", 0);
  if (c.get<uint32_t>("header") != kMagic) c.fail("not a GGUF file (its first bytes are not \"GGUF\")", 0);
  h.version = c.get<uint32_t>("header");
  if (h.version != 2 && h.version != 3)
    c.fail("GGUF version " + std::to_string(h.version) + " is not supported (versions 2 and 3 are)", 4);
  const uint64_t n_tensors = c.get<uint64_t>("header"), n_kv = c.get<uint64_t>("header");
  // A tensor info takes at least 28 bytes, a metadata pair 12: counts past the file are refused early.
  if (n_tensors > size / 28 || n_kv > size / 12)
    c.fail("tensor count " + std::to_string(n_tensors) + " or metadata count " + std::to_string(n_kv) +
               " runs past the end of the file",
           8);
  readMetadata(c, n_kv, h, path);
  for (uint64_t k = 0; k < n_tensors; ++k) readTensorInfo(c, h);
  const uint64_t end = c.at(), pad = (h.alignment - end % h.alignment) % h.alignment;
  h.data_start = end + std::min(pad, size - end);
  if (!h.tensors.empty() && end + pad > size)
    c.fail("truncated data (the data section would start at byte " + std::to_string(end + pad) + ")", end);
  checkData(h, size, path);
  return h;
}

GgufFile::GgufFile(const std::string& path) : path_(path), file_(std::make_shared<MappedFile>(path)) {
  header_ = parseGguf(file_->data(), file_->size(), path);
}

uint64_t GgufFile::size() const { return file_->size(); }

void GgufFile::fail(const std::string& why) const { throw InputError(path_ + ": " + why); }

const GgufValue* GgufFile::find(const std::string& key) const {
  const auto it = header_.metadata.find(key);
  return it == header_.metadata.end() ? nullptr : &it->second;
}

namespace {

std::string kindError(const std::string& key, const GgufValue& v, const char* wanted) {
  return "metadata key " + key + " is " + ggufTypeName(v.type) + ", not " + wanted;
}

}  // namespace

int64_t GgufFile::integer(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) fail("metadata key " + key + " is missing");
  return integer(key, 0);
}

int64_t GgufFile::integer(const std::string& key, int64_t fallback) const {
  const GgufValue* v = find(key);
  if (!v) return fallback;
  if (!v->isInteger()) fail(kindError(key, *v, "an integer"));
  if (v->u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) fail("metadata key " + key + " is too large");
  return v->u != 0 ? static_cast<int64_t>(v->u) : v->i;
}

double GgufFile::real(const std::string& key) const {
  if (!find(key)) fail("metadata key " + key + " is missing");
  return real(key, 0.0);
}

double GgufFile::real(const std::string& key, double fallback) const {
  const GgufValue* v = find(key);
  if (!v) return fallback;
  if (v->isReal()) return v->f;
  if (v->isInteger()) return static_cast<double>(integer(key, 0));
  fail(kindError(key, *v, "a number"));
}

bool GgufFile::boolean(const std::string& key) const {
  if (!find(key)) fail("metadata key " + key + " is missing");
  return boolean(key, false);
}

bool GgufFile::boolean(const std::string& key, bool fallback) const {
  const GgufValue* v = find(key);
  if (!v) return fallback;
  if (v->type != GgufType::Bool) fail(kindError(key, *v, "a BOOL"));
  return v->u != 0;
}

const std::string& GgufFile::string(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) fail("metadata key " + key + " is missing");
  if (v->type != GgufType::String) fail(kindError(key, *v, "a STRING"));
  return v->s;
}

std::string GgufFile::string(const std::string& key, const std::string& fallback) const {
  return find(key) ? string(key) : fallback;
}

const GgufValue& GgufFile::array(const std::string& key, GgufType elem) const {
  const GgufValue* v = find(key);
  if (!v) fail("metadata key " + key + " is missing");
  if (v->type != GgufType::Array || v->elem != elem)
    fail("metadata key " + key + " is not an array of " + ggufTypeName(elem));
  return *v;
}

const GgufTensorInfo* GgufFile::tensor(const std::string& name) const {
  const auto it = header_.by_name.find(name);
  return it == header_.by_name.end() ? nullptr : &header_.tensors[it->second];
}

const uint8_t* GgufFile::data(const GgufTensorInfo& t) const { return file_->data() + header_.data_start + t.offset; }

void GgufFile::requireReadable(const GgufTensorInfo& t) const {
  if (!t.type->readable)
    fail("tensor " + t.name + " has type " + t.type->name + ", which attnscope does not read (it reads " +
         readableGgmlTypes() + ")");
}

Tensor GgufFile::readTensor(const GgufTensorInfo& t) const {
  requireReadable(t);
  Tensor out(Shape(t.dims.rbegin(), t.dims.rend()));
  const int64_t row = t.dims[0], rows = t.rows();
  const uint64_t row_bytes = ggmlRowBytes(*t.type, row);
  for (int64_t r = 0; r < rows; ++r) dequantizeRow(*t.type, data(t) + r * row_bytes, &out.data[r * row], row);
  return out;
}

}  // namespace attnscope
