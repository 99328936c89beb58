// The C types grpc++'s client API is spelled with, so code written against
// grpc++ compiles unchanged: grpc_connectivity_state (GRPC_CHANNEL_READY,
// ...), which Channel::GetState returns, and grpc_compression_algorithm
// (GRPC_COMPRESS_GZIP, ...), which ClientContext and ChannelArguments take,
// and grpc_local_connect_type (UDS, LOCAL_TCP), which
// experimental::LocalCredentials takes.
//
//   if (channel->GetState(/*try_to_connect=*/true) == GRPC_CHANNEL_READY) ...
//   ctx.set_compression_algorithm(GRPC_COMPRESS_GZIP);
//
// The definitions are grpc's own, to the value (ringrpc/client/
// grpc_types_test.cc compiles them against Debian's grpc headers), under
// grpc's include guards: a program that includes grpc's headers too (a
// grpc++ server calling a backend through ringrpc) gets one definition
// whichever header comes first. grpc_local_connect_type lives in a grpc
// header of many other security constants (whose guard would hide them
// all): where that header is installed it is included as it is, and only
// where it is not is the one enum defined here.
#ifndef RINGRPC_CLIENT_GRPC_TYPES_H_
#define RINGRPC_CLIENT_GRPC_TYPES_H_

#include <cstdint>

#if !defined(GRPC_IMPL_CODEGEN_CONNECTIVITY_STATE_H) && !defined(GRPC_IMPL_CONNECTIVITY_STATE_H)
#define GRPC_IMPL_CODEGEN_CONNECTIVITY_STATE_H
#define GRPC_IMPL_CONNECTIVITY_STATE_H
extern "C" {
typedef enum {
  GRPC_CHANNEL_IDLE,
  GRPC_CHANNEL_CONNECTING,
  GRPC_CHANNEL_READY,
  GRPC_CHANNEL_TRANSIENT_FAILURE,
  GRPC_CHANNEL_SHUTDOWN
} grpc_connectivity_state;
}
#endif

#if !defined(GRPC_IMPL_CODEGEN_COMPRESSION_TYPES_H) && !defined(GRPC_IMPL_COMPRESSION_TYPES_H)
#define GRPC_IMPL_CODEGEN_COMPRESSION_TYPES_H
#define GRPC_IMPL_COMPRESSION_TYPES_H
#define GRPC_COMPRESSION_REQUEST_ALGORITHM_MD_KEY "grpc-internal-encoding-request"
#define GRPC_COMPRESSION_CHANNEL_DEFAULT_ALGORITHM "grpc.default_compression_algorithm"
#define GRPC_COMPRESSION_CHANNEL_DEFAULT_LEVEL "grpc.default_compression_level"
#define GRPC_COMPRESSION_CHANNEL_ENABLED_ALGORITHMS_BITSET \
  "grpc.compression_enabled_algorithms_bitset"
extern "C" {
typedef enum {
  GRPC_COMPRESS_NONE = 0,
  GRPC_COMPRESS_DEFLATE,
  GRPC_COMPRESS_GZIP,
  GRPC_COMPRESS_ALGORITHMS_COUNT
} grpc_compression_algorithm;
typedef enum {
  GRPC_COMPRESS_LEVEL_NONE = 0,
  GRPC_COMPRESS_LEVEL_LOW,
  GRPC_COMPRESS_LEVEL_MED,
  GRPC_COMPRESS_LEVEL_HIGH,
  GRPC_COMPRESS_LEVEL_COUNT
} grpc_compression_level;
typedef struct grpc_compression_options {
  uint32_t enabled_algorithms_bitset;
  struct grpc_compression_options_default_level {
    int is_set;
    grpc_compression_level level;
  } default_level;
  struct grpc_compression_options_default_algorithm {
    int is_set;
    grpc_compression_algorithm algorithm;
  } default_algorithm;
} grpc_compression_options;
}
#endif

#if __has_include(<grpc/grpc_security_constants.h>)
#include <grpc/grpc_security_constants.h>
#elif !defined(GRPC_GRPC_SECURITY_CONSTANTS_H)
extern "C" {
typedef enum { UDS = 0, LOCAL_TCP } grpc_local_connect_type;
}
#endif

namespace ringrpc {
// ringrpc's names for the same types.
using ConnectivityState = ::grpc_connectivity_state;
using CompressionAlgorithm = ::grpc_compression_algorithm;
}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_GRPC_TYPES_H_
