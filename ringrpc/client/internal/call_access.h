// ringrpc/client/internal/call_access.h — the one place allowed into
// ClientContext's private fields: what a call reads from its context
// (metadata, cancel state, compression, credentials, authority,
// wait_for_ready) and writes back (the server's metadata, the peer).
// Private to ringrpc/client/.
//
// Threading: the call's CQ thread (the context belongs to the call).
#ifndef RINGRPC_CLIENT_INTERNAL_CALL_ACCESS_H_
#define RINGRPC_CLIENT_INTERNAL_CALL_ACCESS_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ringrpc/client/client_context.h"
#include "ringrpc/client/transport/call.h"
#include "ringrpc/client/transport/compression.h"

namespace ringrpc {
namespace internal {
// The one place allowed into ClientContext's private fields.
class CallAccess {
 public:
  static const std::vector<std::pair<std::string, std::string>>& metadata(const ClientContext& c) {
    return c.metadata_;
  }
  static std::shared_ptr<CancelState> cancel(const ClientContext& c) { return c.cancel_; }
  static CallKind call_kind(const ClientContext& c) { return c.call_kind_; }
  static void set_call_kind(ClientContext& c, CallKind kind) { c.call_kind_ = kind; }
  static const std::optional<CompressionAlgorithm>& compression(const ClientContext& c) {
    return c.compression_;
  }
  static const std::shared_ptr<CallCredentials>& credentials(const ClientContext& c) {
    return c.credentials_;
  }
  static const std::optional<std::string>& authority(const ClientContext& c) {
    return c.authority_;
  }
  static const std::optional<bool>& wait_for_ready(const ClientContext& c) {
    return c.wait_for_ready_;
  }
  // The server's initial metadata, the peer and the response encoding.
  // Once `publish`ed they are final: a caller told they are there (a
  // CompletionQueue tag) may read them on its own thread while the call
  // goes on. Until then each attempt's end overwrites them (a retry's
  // last attempt is the call's).
  static void SetInitialResults(ClientContext& c, const transport::Call& call, std::string peer,
                                bool publish) {
    if (c.initial_set_) return;
    c.initial_set_ = publish;
    c.initial_ = {call.initial_metadata().begin(), call.initial_metadata().end()};
    c.peer_ = std::move(peer);
    std::optional<transport::Compression> r = transport::ParseCompression(call.response_encoding());
    c.response_compression_ = r ? static_cast<CompressionAlgorithm>(*r) : GRPC_COMPRESS_NONE;
  }
  // At the end: the initial results (unless set) and the trailing metadata.
  static void SetResults(ClientContext& c, const transport::Call& call,
                         const transport::Metadata& trailing, std::string peer) {
    SetInitialResults(c, call, std::move(peer), /*publish=*/false);
    c.trailing_ = {trailing.begin(), trailing.end()};
  }
};
}  // namespace internal

}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_INTERNAL_CALL_ACCESS_H_
