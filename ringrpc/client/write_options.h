// ringrpc/client/write_options.h — options of one streamed message, as grpc++'s
// grpc::WriteOptions (what ringrpc honours of it): the last message (write
// and half-close in one), and sending this one message uncompressed when
// the call compresses its requests.
#ifndef RINGRPC_CLIENT_WRITE_OPTIONS_H_
#define RINGRPC_CLIENT_WRITE_OPTIONS_H_

namespace ringrpc {

class WriteOptions {
 public:
  WriteOptions& set_last_message() {
    last_ = true;
    return *this;
  }
  bool is_last_message() const { return last_; }

  // This message goes uncompressed even if the call's requests are
  // compressed (ClientContext::set_compression_algorithm or the channel's
  // grpc.default_compression_algorithm).
  WriteOptions& set_no_compression() {
    no_compression_ = true;
    return *this;
  }
  WriteOptions& clear_no_compression() {
    no_compression_ = false;
    return *this;
  }
  bool get_no_compression() const { return no_compression_; }

 private:
  bool last_ = false;
  bool no_compression_ = false;
};

}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_WRITE_OPTIONS_H_
