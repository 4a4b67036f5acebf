// NumPy .npy reading and writing. Format reference:
// https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
// Every size the header declares is checked against the file size before anything is
// allocated, so a hostile header cannot make us allocate terabytes.
#include "tensor/npy.h"

#include <Eigen/Core>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <fstream>
#include <limits>
#include <memory>

#include <sys/stat.h>
#include <unistd.h>

#include "tensor/byte_source.h"
#include "tensor/interrupt.h"

namespace attnscope {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
  throw InputError(path + ": " + problem);
}

// Header text quoted in a message: keeps it one printable line (\xNN for other bytes).
std::string printable(const std::string& text) {
  std::string out;
  for (unsigned char c : text.substr(0, 40)) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return text.size() > 40 ? out + "..." : out;
}

const char* dtypeName(NpyDtype dtype) {
  switch (dtype) {
    case NpyDtype::Float16: return "float16";
    case NpyDtype::Float32: return "float32";
    case NpyDtype::Float64: return "float64";
    case NpyDtype::Bool: return "bool";
    case NpyDtype::Int32: return "int32";
    case NpyDtype::Int64: return "int64";
  }
  return "?";
}

size_t itemSize(NpyDtype dtype) {
  switch (dtype) {
    case NpyDtype::Float16: return 2;
    case NpyDtype::Float32: case NpyDtype::Int32: return 4;
    case NpyDtype::Float64: case NpyDtype::Int64: return 8;
    case NpyDtype::Bool: return 1;
  }
  return 1;
}

// The header is a Python dict literal, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// Only the three keys NumPy writes are understood; values are strings, booleans or
// tuples of non-negative integers.
class HeaderParser {
 public:
  HeaderParser(const std::string& path, const std::string& text) : path_(path), text_(text) {}

  void parse(std::string& descr, bool& fortran_order, Shape& shape) {
    bool have_descr = false, have_order = false, have_shape = false;
    skipSpace();
    expect('{');
    while (true) {
      skipSpace();
      if (peek() == '}') { ++pos_; break; }
      const std::string key = parseString();
      skipSpace();
      expect(':');
      skipSpace();
      if (key == "descr") {
        if (peek() != '\'' && peek() != '"') fail(path_, "structured dtypes are not supported");
        descr = parseString();
        have_descr = true;
      } else if (key == "fortran_order") {
        fortran_order = parseBool();
        have_order = true;
      } else if (key == "shape") {
        shape = parseShape();
        have_shape = true;
      } else {
        malformed("unexpected key '" + printable(key) + "'");
      }
      skipSpace();
      if (peek() == ',') { ++pos_; continue; }
      skipSpace();
      if (peek() == '}') { ++pos_; break; }
      malformed("expected ',' or '}'");
    }
    skipSpace();
    if (pos_ != text_.size()) malformed("trailing characters after the dict");
    if (!have_descr) malformed("no 'descr' key");
    if (!have_order) malformed("no 'fortran_order' key");
    if (!have_shape) malformed("no 'shape' key");
  }

 private:
  [[noreturn]] void malformed(const std::string& why) {
    fail(path_, "malformed .npy header (" + why + ")");
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\r'))
      ++pos_;
  }
  void expect(char c) {
    if (peek() != c) malformed(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string parseString() {
    const char quote = peek();
    if (quote != '\'' && quote != '"') malformed("expected a quoted string");
    ++pos_;
    const size_t end = text_.find(quote, pos_);
    if (end == std::string::npos) malformed("unterminated string");
    std::string out = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return out;
  }
  bool parseBool() {
    if (text_.compare(pos_, 4, "True") == 0) { pos_ += 4; return true; }
    if (text_.compare(pos_, 5, "False") == 0) { pos_ += 5; return false; }
    malformed("fortran_order is not True or False");
  }
  Shape parseShape() {
    Shape shape;
    expect('(');
    while (true) {
      skipSpace();
      if (peek() == ')') { ++pos_; break; }
      if (peek() < '0' || peek() > '9') malformed("shape entries must be non-negative integers");
      int64_t value = 0;
      while (peek() >= '0' && peek() <= '9') {
        const int digit = peek() - '0';
        if (value > (std::numeric_limits<int64_t>::max() - digit) / 10)
          fail(path_, "shape entry too large");
        value = value * 10 + digit;
        ++pos_;
      }
      if (peek() == 'L') ++pos_;  // Python 2 long suffix
      shape.push_back(value);
      skipSpace();
      if (peek() == ',') { ++pos_; continue; }
      skipSpace();
      if (peek() == ')') { ++pos_; break; }
      malformed("expected ',' or ')' in shape");
    }
    return shape;
  }

  const std::string& path_;
  const std::string& text_;
  size_t pos_ = 0;
};

NpyDtype parseDescr(const std::string& path, const std::string& descr) {
  if (descr.size() < 2) fail(path, "unsupported dtype '" + printable(descr) + "'");
  const char order = descr[0];
  const std::string kind = descr.substr(1);
  if (kind == "b1" && (order == '|' || order == '<' || order == '>' || order == '='))
    return NpyDtype::Bool;
  const bool typed = kind == "f2" || kind == "f4" || kind == "f8" || kind == "i4" || kind == "i8";
  if (typed && order == '>') fail(path, "big-endian data ('" + descr + "') is not supported; save it little-endian");
  if (typed && (order == '<' || order == '=')) {
    if (kind == "f2") return NpyDtype::Float16;
    if (kind == "f4") return NpyDtype::Float32;
    if (kind == "f8") return NpyDtype::Float64;
    if (kind == "i4") return NpyDtype::Int32;
    return NpyDtype::Int64;
  }
  fail(path, "unsupported dtype '" + printable(descr) + "' (expected float16, float32, float64, bool, int32 or int64)");
}

// The parsed header plus the raw little-endian element bytes.
struct RawNpy {
  NpyDtype dtype = NpyDtype::Float32;
  Shape shape;
  int64_t count = 0;
  std::vector<char> bytes;  // count * itemSize(dtype)
};

uint32_t readLittleEndian(const unsigned char* p, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

// An .npy file on disk.
class FileSource : public ByteSource {
 public:
  explicit FileSource(const std::string& path) : in_(path, std::ios::binary) {
    if (!in_) fail(path, std::string("cannot open (") + std::strerror(errno) + ")");
    in_.seekg(0, std::ios::end);
    const std::streamoff size = in_.tellg();
    if (size < 0) fail(path, "cannot read the file size");
    size_ = static_cast<uint64_t>(size);
    in_.seekg(0, std::ios::beg);
  }
  uint64_t size() const override { return size_; }
  bool read(char* dst, uint64_t n) override {
    return static_cast<bool>(in_.read(dst, static_cast<std::streamsize>(n)));
  }

 private:
  std::ifstream in_;
  uint64_t size_ = 0;
};

// Reads `n` bytes or fails naming what was being read.
void readExactly(const std::string& path, ByteSource& source, char* dst, uint64_t n, const char* what) {
  if (source.read(dst, n)) return;
  const std::string why = source.error();
  fail(path, why.empty() ? std::string("truncated file (") + what + " ends early)" : why);
}

RawNpy readRaw(const std::string& path, ByteSource& source, const NpyShapeCheck& check = {}) {
  const uint64_t file_size = source.size();
  unsigned char preamble[12];
  const size_t magic_and_version = kMagicLen + 2;
  if (file_size < magic_and_version) fail(path, "not a .npy file (bad magic)");
  readExactly(path, source, reinterpret_cast<char*>(preamble), magic_and_version, "header");
  if (std::memcmp(preamble, kMagic, kMagicLen) != 0) fail(path, "not a .npy file (bad magic)");
  const int major = preamble[6], minor = preamble[7];
  if (major < 1 || major > 3 || minor != 0)
    fail(path, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor));
  const size_t len_bytes = major == 1 ? 2 : 4;
  if (file_size < magic_and_version + len_bytes) fail(path, "truncated file (header ends early)");
  readExactly(path, source, reinterpret_cast<char*>(preamble + magic_and_version), len_bytes, "header");
  const uint64_t header_len = readLittleEndian(preamble + magic_and_version, len_bytes);
  const uint64_t data_offset = magic_and_version + len_bytes + header_len;
  if (data_offset > file_size) fail(path, "truncated file (header ends early)");
  std::string header(header_len, '\0');
  readExactly(path, source, header.data(), header_len, "header");
  // Version 1/2 headers are latin-1, version 3 UTF-8; the keys and values we accept are ASCII.

  std::string descr;
  bool fortran_order = false;
  RawNpy raw;
  HeaderParser(path, header).parse(descr, fortran_order, raw.shape);
  raw.dtype = parseDescr(path, descr);

  // Element count with overflow checks, then against the bytes the file really holds.
  const uint64_t available = file_size - data_offset;
  const size_t item = itemSize(raw.dtype);
  uint64_t count = 1;
  bool overflow = false;
  for (int64_t dim : raw.shape) {
    if (dim != 0 && count > std::numeric_limits<uint64_t>::max() / item / static_cast<uint64_t>(dim))
      overflow = true;
    else
      count *= static_cast<uint64_t>(dim);
  }
  if (overflow || count * item > available)
    fail(path, "header declares shape " + shapeToString(raw.shape) + " of " + dtypeName(raw.dtype) +
                   " but the file holds only " + std::to_string(available) + " data bytes (truncated?)");
  if (fortran_order && raw.shape.size() > 1) {
    int64_t non_trivial = 0;
    for (int64_t dim : raw.shape) non_trivial += dim > 1;
    if (non_trivial > 1) fail(path, "Fortran order is not supported; save a C-ordered array (np.ascontiguousarray)");
  }
  if (check) check(raw.shape);
  raw.count = static_cast<int64_t>(count);
  raw.bytes.resize(count * item);
  if (count > 0) readExactly(path, source, raw.bytes.data(), raw.bytes.size(), "data");
  return raw;
}

RawNpy readRaw(const std::string& path) {
  FileSource source(path);
  return readRaw(path, source);
}

template <typename T>
T loadLittleEndian(const char* p) {
  // x86-64 and every platform we build on is little-endian; memcpy avoids aliasing issues.
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

double elementAsDouble(const RawNpy& raw, int64_t i) {
  const char* p = raw.bytes.data() + i * itemSize(raw.dtype);
  switch (raw.dtype) {
    case NpyDtype::Float16:
      return static_cast<double>(Eigen::numext::bit_cast<Eigen::half>(loadLittleEndian<uint16_t>(p)));
    case NpyDtype::Float32: return loadLittleEndian<float>(p);
    case NpyDtype::Float64: return loadLittleEndian<double>(p);
    case NpyDtype::Bool: return *p != 0 ? 1.0 : 0.0;
    case NpyDtype::Int32: return loadLittleEndian<int32_t>(p);
    case NpyDtype::Int64: return static_cast<double>(loadLittleEndian<int64_t>(p));
  }
  return 0.0;
}

std::string formatDouble(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string indexToString(const Shape& shape, int64_t flat) {
  Shape index(shape.size());
  for (size_t a = shape.size(); a-- > 0;) {
    index[a] = flat % shape[a];
    flat /= shape[a];
  }
  return shapeToString(index);
}

std::string npyHeader(const char* descr, const Shape& shape) {
  // NumPy style: "(2, 3)", "(5,)", "()".
  std::string shape_text = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) shape_text += ", ";
    shape_text += std::to_string(shape[i]);
  }
  if (shape.size() == 1) shape_text += ",";
  shape_text += ")";
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape_text + ", }";
  // Pad with spaces so magic(6) + version(2) + length(2) + header ends on a 64-byte boundary.
  const size_t preamble = kMagicLen + 2 + 2;
  const size_t total = (preamble + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - preamble - dict.size() - 1, ' ');
  dict += '\n';
  std::string out(kMagic, kMagicLen);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>((dict.size() >> 8) & 0xff);
  return out + dict;
}

// Writes header + payload to a temp file beside `path`, then renames it into place.
// Writes `path` atomically: write(write_all) writes every byte through write_all (false on
// a failed write); a temporary file in the same folder, renamed when complete.
using WriteAll = std::function<bool(const char*, size_t)>;
void writeAtomicWith(const std::string& path, const std::function<bool(const WriteAll&)>& write) {
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  int fd = -1;
  // Registered so that SIGINT/SIGTERM during the write leaves no temp file behind.
  const RemoveOnInterrupt guard([&] {
    std::string temp = dir + "/." + base + ".tmpXXXXXX";
    fd = mkstemp(temp.data());
    if (fd < 0) throw InputError(path + ": cannot write (" + std::strerror(errno) + ")");
    return temp;
  });
  const std::string& temp = guard.path();
  // mkstemp creates 0600; give the final file the usual permissions (0666 & ~umask).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  const WriteAll write_all = [fd](const char* p, size_t n) {
    while (n > 0) {
      const ssize_t w = ::write(fd, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  };
  bool ok = false;
  try {
    ok = write(write_all);
  } catch (...) {  // the writer's own failure: no file, no temp file
    ::close(fd);
    ::unlink(temp.c_str());
    throw;
  }
  const int saved_errno = errno;
  const bool closed = ::close(fd) == 0;
  if (!ok || !closed) {
    ::unlink(temp.c_str());
    throw InputError(path + ": cannot write (" + std::strerror(ok ? errno : saved_errno) + ")");
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const int rename_errno = errno;
    ::unlink(temp.c_str());
    throw InputError(path + ": cannot write (" + std::strerror(rename_errno) + ")");
  }
}

void writeAtomic(const std::string& path, const std::string& header, const char* payload, size_t payload_size) {
  writeAtomicWith(path, [&](const WriteAll& write_all) {
    return write_all(header.data(), header.size()) && write_all(payload, payload_size);
  });
}

}  // namespace

void writeNpyStream(const std::string& path, const Shape& shape, const std::function<bool(std::vector<float>&)>& next) {
  int64_t count = 1;
  for (int64_t n : shape) count *= n;
  int64_t written = 0;
  std::vector<float> chunk;
  writeAtomicWith(path, [&](const WriteAll& write_all) {
    const std::string header = npyHeader("<f4", shape);
    if (!write_all(header.data(), header.size())) return false;
    while (next(chunk)) {
      written += static_cast<int64_t>(chunk.size());
      if (written > count) break;
      if (!write_all(reinterpret_cast<const char*>(chunk.data()), chunk.size() * sizeof(float))) return false;
    }
    if (written != count)
      throw std::logic_error("writeNpyStream: " + std::to_string(written) + " values for shape " + shapeToString(shape));
    return true;
  });
}

NpyArray readNpy(const std::string& path) {
  const RawNpy raw = readRaw(path);
  NpyArray out;
  out.dtype = raw.dtype;
  out.shape = raw.shape;
  out.values.resize(raw.count);
  for (int64_t i = 0; i < raw.count; ++i) out.values[i] = elementAsDouble(raw, i);
  return out;
}

Tensor readNpyFloatFrom(const std::string& path, ByteSource& source, const NpyShapeCheck& check) {
  const RawNpy raw = readRaw(path, source, check);
  if (raw.dtype != NpyDtype::Float16 && raw.dtype != NpyDtype::Float32 && raw.dtype != NpyDtype::Float64)
    fail(path, std::string("dtype ") + dtypeName(raw.dtype) +
                   " is not allowed here (expected float16, float32 or float64)");
  Tensor out;
  out.shape = raw.shape;
  out.data.resize(raw.count);
  for (int64_t i = 0; i < raw.count; ++i) {
    const double v = elementAsDouble(raw, i);
    if (std::isnan(v)) fail(path, "NaN at index " + indexToString(raw.shape, i) + " (values must be finite)");
    if (std::isinf(v)) fail(path, "Inf at index " + indexToString(raw.shape, i) + " (values must be finite)");
    if (std::fabs(v) > std::numeric_limits<float>::max())
      fail(path, "value " + formatDouble(v) + " at index " + indexToString(raw.shape, i) + " overflows float32");
    out.data[i] = static_cast<float>(v);
  }
  return out;
}

Tensor readNpyFloat(const std::string& path, const NpyShapeCheck& check) {
  FileSource source(path);
  return readNpyFloatFrom(path, source, check);
}

BoolTensor readNpyBool(const std::string& path) {
  const RawNpy raw = readRaw(path);
  if (raw.dtype != NpyDtype::Bool)
    fail(path, std::string("dtype ") + dtypeName(raw.dtype) + " is not allowed here (expected bool)");
  BoolTensor out;
  out.shape = raw.shape;
  out.data.resize(raw.count);
  for (int64_t i = 0; i < raw.count; ++i) out.data[i] = raw.bytes[i] != 0 ? 1 : 0;
  return out;
}

std::vector<int64_t> readNpyInt(const std::string& path) {
  const RawNpy raw = readRaw(path);
  if (raw.dtype != NpyDtype::Int32 && raw.dtype != NpyDtype::Int64)
    fail(path, std::string("dtype ") + dtypeName(raw.dtype) + " is not allowed here (expected int32 or int64)");
  if (raw.shape.size() != 1) fail(path, "expected a 1-D array, got shape " + shapeToString(raw.shape));
  std::vector<int64_t> out(raw.count);
  for (int64_t i = 0; i < raw.count; ++i)
    out[i] = raw.dtype == NpyDtype::Int32 ? loadLittleEndian<int32_t>(raw.bytes.data() + 4 * i)
                                          : loadLittleEndian<int64_t>(raw.bytes.data() + 8 * i);
  return out;
}

void writeNpy(const std::string& path, const Tensor& tensor) {
  if (static_cast<int64_t>(tensor.data.size()) != numel(tensor.shape))
    throw std::logic_error("writeNpy: data size does not match shape " + shapeToString(tensor.shape));
  writeAtomic(path, npyHeader("<f4", tensor.shape), reinterpret_cast<const char*>(tensor.data.data()),
              tensor.data.size() * sizeof(float));
}

void writeNpy(const std::string& path, const BoolTensor& tensor) {
  if (static_cast<int64_t>(tensor.data.size()) != numel(tensor.shape))
    throw std::logic_error("writeNpy: data size does not match shape " + shapeToString(tensor.shape));
  writeAtomic(path, npyHeader("|b1", tensor.shape), reinterpret_cast<const char*>(tensor.data.data()),
              tensor.data.size());
}

void writeNpyInt64(const std::string& path, const Shape& shape, const std::vector<int64_t>& values) {
  if (static_cast<int64_t>(values.size()) != numel(shape))
    throw std::logic_error("writeNpyInt64: data size does not match shape " + shapeToString(shape));
  writeAtomic(path, npyHeader("<i8", shape), reinterpret_cast<const char*>(values.data()), values.size() * sizeof(int64_t));
}

void writeFileAtomic(const std::string& path, const std::string& bytes) {
  writeAtomic(path, std::string(), bytes.data(), bytes.size());
}

}  // namespace attnscope
