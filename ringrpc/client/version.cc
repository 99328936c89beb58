#include "ringrpc/client/version.h"

namespace ringrpc {

const char* Version() { return RINGRPC_VERSION; }

}  // namespace ringrpc
