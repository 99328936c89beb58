// ringrpc/client/transport/internal/ms.h — a duration as "<n>ms" for error
// messages. Private to the transport.
#ifndef RINGRPC_CLIENT_TRANSPORT_INTERNAL_MS_H_
#define RINGRPC_CLIENT_TRANSPORT_INTERNAL_MS_H_

#include <chrono>
#include <string>

#include "absl/strings/str_cat.h"
#include "ringrpc/base/time.h"

namespace ringrpc::transport {

inline std::string Ms(Duration d) {
  return absl::StrCat(std::chrono::duration_cast<std::chrono::milliseconds>(d).count(), "ms");
}

}  // namespace ringrpc::transport

#endif  // RINGRPC_CLIENT_TRANSPORT_INTERNAL_MS_H_
