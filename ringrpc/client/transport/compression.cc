#include "ringrpc/client/transport/compression.h"

#include <zlib.h>

#include <algorithm>
#include <new>

#include "absl/strings/str_cat.h"

namespace ringrpc::transport {
namespace {

// zlib's windowBits: 15 is the zlib format ("deflate" in gRPC), +16 gzip.
int WindowBits(Compression c) { return c == Compression::kGzip ? 15 + 16 : 15; }

// zlib takes uInt lengths; feed it in pieces no larger than this.
constexpr size_t kMaxChunk = 1u << 30;

}  // namespace

const char* CompressionName(Compression c) {
  switch (c) {
    case Compression::kIdentity:
      return "identity";
    case Compression::kDeflate:
      return "deflate";
    case Compression::kGzip:
      return "gzip";
  }
  return "identity";
}

std::optional<Compression> ParseCompression(std::string_view name) {
  for (Compression c : {Compression::kIdentity, Compression::kDeflate, Compression::kGzip}) {
    if (name == CompressionName(c)) return c;
  }
  return std::nullopt;
}

absl::Status Compress(Compression c, int level, std::string_view in, std::string& out) {
  if (c == Compression::kIdentity) {
    out.append(in);
    return absl::OkStatus();
  }
  z_stream z{};
  if (deflateInit2(&z, level, Z_DEFLATED, WindowBits(c), 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return absl::InternalError(
        absl::StrCat("zlib could not start ", CompressionName(c), " compression"));
  }
  const size_t start = out.size();
  size_t produced = 0;
  int rc = Z_OK;
  try {
    out.resize(start + deflateBound(&z, static_cast<uLong>(std::min(in.size(), kMaxChunk))) + 64);
    size_t consumed = 0;
    for (;;) {
      if (z.avail_in == 0 && consumed < in.size()) {
        size_t piece = std::min(in.size() - consumed, kMaxChunk);
        z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + consumed));
        z.avail_in = static_cast<uInt>(piece);
        consumed += piece;
      }
      const int flush = consumed == in.size() ? Z_FINISH : Z_NO_FLUSH;
      if (out.size() - start == produced) out.resize(start + 2 * produced + 64);
      size_t room = std::min(out.size() - start - produced, kMaxChunk);
      z.next_out = reinterpret_cast<Bytef*>(out.data() + start + produced);
      z.avail_out = static_cast<uInt>(room);
      rc = deflate(&z, flush);
      produced += room - z.avail_out;
      if (rc != Z_OK && rc != Z_BUF_ERROR) break;  // Z_STREAM_END: done
    }
  } catch (const std::bad_alloc&) {
    rc = Z_MEM_ERROR;
  }
  deflateEnd(&z);
  if (rc != Z_STREAM_END) {
    out.resize(start);
    return absl::InternalError(
        absl::StrCat(CompressionName(c), " compression failed (zlib ", rc, ")"));
  }
  out.resize(start + produced);
  return absl::OkStatus();
}

absl::StatusOr<std::string> Decompress(Compression c, std::string_view in, uint32_t max_size) {
  if (c == Compression::kIdentity) {
    if (in.size() > max_size) {
      return absl::ResourceExhaustedError(
          absl::StrCat("received message larger than max (", in.size(), " vs. ", max_size, ")"));
    }
    return std::string(in);
  }
  z_stream z{};
  if (inflateInit2(&z, WindowBits(c)) != Z_OK) {
    return absl::InternalError(
        absl::StrCat("zlib could not start ", CompressionName(c), " decompression"));
  }
  std::string out;
  absl::Status status;
  try {
    // A first guess from the input; it grows by doubling, never past the
    // limit (+1 byte, to see that the message goes past it).
    const size_t cap = size_t{max_size} + 1;
    out.resize(std::min(cap, std::max<size_t>(in.size() * 4, 256)));
    size_t produced = 0;
    size_t consumed = 0;
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
      if (z.avail_in == 0 && consumed < in.size()) {
        size_t piece = std::min(in.size() - consumed, kMaxChunk);
        z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + consumed));
        z.avail_in = static_cast<uInt>(piece);
        consumed += piece;
      }
      if (produced == out.size()) {
        if (out.size() == cap) break;  // over the limit
        out.resize(std::min(cap, out.size() * 2));
      }
      size_t room = std::min(out.size() - produced, kMaxChunk);
      z.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
      z.avail_out = static_cast<uInt>(room);
      rc = inflate(&z, Z_NO_FLUSH);
      produced += room - z.avail_out;
      if (rc == Z_BUF_ERROR && z.avail_in == 0 && consumed == in.size()) break;  // truncated
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) break;
    }
    if (produced > max_size) {
      status = absl::ResourceExhaustedError(
          absl::StrCat("received message larger than max (more than ", max_size, " bytes once ",
                       CompressionName(c), "-decompressed)"));
    } else if (rc != Z_STREAM_END) {
      status = absl::InternalError(
          absl::StrCat("corrupt ", CompressionName(c), "-compressed message (zlib ", rc,
                       z.msg ? absl::StrCat(": ", z.msg) : std::string(), ")"));
    } else if (z.avail_in != 0 || consumed != in.size()) {
      status = absl::InternalError(
          absl::StrCat("bytes after the end of a ", CompressionName(c), "-compressed message"));
    } else {
      out.resize(produced);
    }
  } catch (const std::bad_alloc&) {
    status = absl::ResourceExhaustedError(
        absl::StrCat("out of memory decompressing a ", CompressionName(c), " message"));
  }
  inflateEnd(&z);
  if (!status.ok()) return status;
  return out;
}

}  // namespace ringrpc::transport
