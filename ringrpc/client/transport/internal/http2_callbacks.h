// ringrpc/client/transport/internal/http2_callbacks.h — the nghttp2 session
// callbacks of an Http2Connection: how frames from the server reach its
// calls, and how a call's queued bytes reach nghttp2. Private to the
// transport: included by http2_connection.cc and http2_callbacks.cc only.
//
// Threading: nghttp2 calls these from inside mem_recv/mem_send, on the
// connection's loop thread.
#ifndef RINGRPC_CLIENT_TRANSPORT_INTERNAL_HTTP2_CALLBACKS_H_
#define RINGRPC_CLIENT_TRANSPORT_INTERNAL_HTTP2_CALLBACKS_H_

#include <nghttp2/nghttp2.h>

#include "absl/status/status.h"
#include "ringrpc/client/transport/http2_connection.h"

namespace ringrpc::transport {

struct Http2Connection::Callbacks {
  // Sets every receive, send and error callback below on `cbs` (ReadData is
  // set per stream, on its data provider).
  static void Install(nghttp2_session_callbacks* cbs);

  static Http2Connection* Conn(void* user_data);
  static Call* CallOf(nghttp2_session* s, int32_t stream_id);
  static int OnBeginFrame(nghttp2_session*, const nghttp2_frame_hd* hd, void* user_data);
  static int OnBeginHeaders(nghttp2_session* s, const nghttp2_frame* frame, void*);
  static int OnHeader(nghttp2_session* s, const nghttp2_frame* frame, const uint8_t* name,
                      size_t namelen, const uint8_t* value, size_t valuelen, uint8_t,
                      void* user_data);
  static void Violation(Call* call, absl::Status status);
  static void FinishFromTrailers(Call* call);
  static int OnFrameRecv(nghttp2_session* s, const nghttp2_frame* frame, void* user_data);
  static int OnDataChunk(nghttp2_session* s, uint8_t, int32_t stream_id, const uint8_t* data,
                         size_t len, void* user_data);
  static int OnStreamClose(nghttp2_session* s, int32_t stream_id, uint32_t error_code, void*);
  static int OnError(nghttp2_session*, int, const char* msg, size_t len, void* user_data);
  static int OnFrameSend(nghttp2_session*, const nghttp2_frame* frame, void* user_data);
  static ssize_t ReadData(nghttp2_session* s, int32_t stream_id, uint8_t* buf, size_t length,
                          uint32_t* flags, nghttp2_data_source*, void*);
  static int SendData(nghttp2_session* s, nghttp2_frame* frame, const uint8_t* framehd,
                      size_t length, nghttp2_data_source* source, void* user_data);
};

}  // namespace ringrpc::transport

#endif  // RINGRPC_CLIENT_TRANSPORT_INTERNAL_HTTP2_CALLBACKS_H_
