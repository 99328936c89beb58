// ringrpc/ringrpc.h — all of ringrpc's client API in one include, as
// <grpcpp/grpcpp.h> is grpc++'s: channels and their arguments, credentials,
// ClientContext and Status, blocking / callback / coroutine / CompletionQueue
// calls, streams and reactors, GenericStub, interceptors, and grpc's C
// names (GRPC_CHANNEL_*, GRPC_COMPRESS_*, GRPC_ARG_*).
//
//   #include "ringrpc/ringrpc.h"
//   #include "helloworld.ringrpc.pb.h"
//
//   auto channel = ringrpc::CreateChannel("localhost:50051",
//                                         ringrpc::InsecureChannelCredentials());
//   auto stub = helloworld::Greeter::NewStub(channel);
//
// Bazel: deps = ["@ringrpc//ringrpc"]. CMake: target_link_libraries(app
// ringrpc::client). Every header is reached as "ringrpc/...", so no folder
// of a user's (client/, base/) can shadow one of ringrpc's.
#ifndef RINGRPC_RINGRPC_H_
#define RINGRPC_RINGRPC_H_

#include "ringrpc/client/async_stream.h"
#include "ringrpc/client/async_unary_call.h"
#include "ringrpc/client/blocking_stream.h"
#include "ringrpc/client/call_credentials.h"
#include "ringrpc/client/callback_reactor.h"
#include "ringrpc/client/channel.h"
#include "ringrpc/client/channel_arg_names.h"
#include "ringrpc/client/channel_arguments.h"
#include "ringrpc/client/client_context.h"
#include "ringrpc/client/completion_queue.h"
#include "ringrpc/client/error_details.h"
#include "ringrpc/client/generic_stub.h"
#include "ringrpc/client/grpc_types.h"
#include "ringrpc/client/interceptor.h"
#include "ringrpc/client/lb/lb_policy.h"
#include "ringrpc/client/message_parse.h"
#include "ringrpc/client/resolver.h"
#include "ringrpc/client/status.h"
#include "ringrpc/client/stub_options.h"
#include "ringrpc/client/typed_call.h"
#include "ringrpc/client/version.h"

#endif  // RINGRPC_RINGRPC_H_
