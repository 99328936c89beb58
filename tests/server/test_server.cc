// A grpc++ 1.51 server (Debian's libgrpc++) for ringrpc's tests, run as its
// own process so tests can kill, stop and restart it, and so no grpc++ code
// runs inside a TSAN test process.
//
// Usage: test_server --listen=127.0.0.1:0 | --listen=unix:/path
// Prints "LISTENING <port>" (0 for unix sockets) once serving. SIGTERM
// shuts down gracefully (GOAWAY; in-flight calls get 5 s to finish).
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "tests/proto/echo_test.grpc.pb.h"
#include "tests/server/serve.h"

namespace {

using grpc::ServerContext;
using grpc::Status;
using ringrpc::test::EchoRequest;
using ringrpc::test::EchoResponse;

std::atomic<int64_t> cancelled{0};
std::atomic<int64_t> calls{0};

// Sleeps `ms`, waking early if the call is cancelled. False if cancelled.
bool SleepWatching(ServerContext* ctx, int ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) {
    if (ctx->IsCancelled()) {
      cancelled.fetch_add(1);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// x-echo-* request metadata comes back as initial metadata, x-trailer-* as
// trailing metadata. x-compress-response: gzip|deflate compresses the
// response messages (x-compress-mixed: every other streamed message goes
// uncompressed).
void EchoMetadata(ServerContext* ctx) {
  for (const auto& [k, v] : ctx->client_metadata()) {
    std::string key(k.data(), k.size()), value(v.data(), v.size());
    if (key.rfind("x-echo-", 0) == 0) ctx->AddInitialMetadata(key, value);
    if (key.rfind("x-trailer-", 0) == 0) ctx->AddTrailingMetadata(key, value);
    if (key == "x-compress-response") {
      ctx->set_compression_algorithm(value == "gzip" ? GRPC_COMPRESS_GZIP : GRPC_COMPRESS_DEFLATE);
    }
  }
}

// Every other message of a stream uncompressed, if the client asked.
grpc::WriteOptions StreamWriteOptions(ServerContext* ctx, int i) {
  grpc::WriteOptions o;
  if (ctx->client_metadata().count("x-compress-mixed") != 0 && i % 2 == 1) o.set_no_compression();
  return o;
}

// --unary_delay_ms=N: every Unary call takes N ms more (a slow backend).
int unary_delay_ms = 0;
// --slow_percent=P --slow_ms=M: P% of Unary calls, drawn at random, take
// M ms more (a latency tail).
int slow_percent = 0;
int slow_ms = 0;

bool DrawSlow() {
  static std::mutex mu;
  static std::mt19937 rng(std::random_device{}());
  std::lock_guard<std::mutex> lock(mu);
  return std::uniform_int_distribution<int>(0, 99)(rng) < slow_percent;
}

// --require_token=T: every call must carry "authorization: Bearer T".
std::string required_token;

bool Authorized(ServerContext* ctx) {
  if (required_token.empty()) return true;
  auto it = ctx->client_metadata().find("authorization");
  return it != ctx->client_metadata().end() &&
         std::string(it->second.data(), it->second.size()) == "Bearer " + required_token;
}

// Retries (gRFC A6): "x-fail-attempts: N" with "x-call-key: K" fails the
// first N calls carrying key K with "x-fail-code" (default UNAVAILABLE),
// adding "x-pushback-ms" as grpc-retry-pushback-ms. Each call says which
// attempt of its key it was (x-attempt) and what grpc-previous-rpc-attempts
// it carried (x-previous-attempts), in initial metadata or trailers.
// "x-stall-attempts: N" stalls the first N attempts instead.
std::mutex attempts_mu;
std::map<std::string, int> attempts_by_key;

std::string Md(ServerContext* ctx, const char* key) {
  auto it = ctx->client_metadata().find(key);
  return it == ctx->client_metadata().end() ? std::string()
                                            : std::string(it->second.data(), it->second.size());
}

std::optional<Status> FailOnPurpose(ServerContext* ctx) {
  const std::string key = Md(ctx, "x-call-key");
  if (key.empty()) return std::nullopt;
  int attempt;
  {
    std::lock_guard<std::mutex> lock(attempts_mu);
    attempt = attempts_by_key[key]++;
  }
  const std::string previous = Md(ctx, "grpc-previous-rpc-attempts");
  // "x-stall-attempts: N": the first N attempts get no answer (no headers)
  // for 10 s, or until the client cancels them (perAttemptRecvTimeout).
  if (attempt < std::atoi(Md(ctx, "x-stall-attempts").c_str()) && !SleepWatching(ctx, 10000)) {
    return Status(grpc::StatusCode::CANCELLED, "cancelled while stalling on purpose");
  }
  const bool fail = attempt < std::atoi(Md(ctx, "x-fail-attempts").c_str());
  // Trailers-only on failure: the metadata rides in the trailers.
  if (fail) {
    ctx->AddTrailingMetadata("x-attempt", std::to_string(attempt));
    ctx->AddTrailingMetadata("x-previous-attempts", previous.empty() ? "none" : previous);
    const std::string pushback = Md(ctx, "x-pushback-ms");
    if (!pushback.empty()) ctx->AddTrailingMetadata("grpc-retry-pushback-ms", pushback);
    const std::string code = Md(ctx, "x-fail-code");
    return Status(static_cast<grpc::StatusCode>(code.empty() ? 14 : std::atoi(code.c_str())),
                  "attempt " + std::to_string(attempt) + " failed on purpose");
  }
  ctx->AddInitialMetadata("x-attempt", std::to_string(attempt));
  ctx->AddInitialMetadata("x-previous-attempts", previous.empty() ? "none" : previous);
  return std::nullopt;
}

// Client-side health checking (gRFC A17): with --health the server runs
// grpc++'s own health service (grpc::EnableDefaultHealthCheckService);
// --health_serving=a,b sets those services SERVING at start, and a Unary
// call with "x-set-health: NAME=0|1" sets NAME NOT_SERVING or SERVING.
grpc::HealthCheckServiceInterface* health_service = nullptr;

void SetHealth(ServerContext* ctx) {
  const std::string v = Md(ctx, "x-set-health");
  const size_t eq = v.rfind('=');
  if (health_service == nullptr || eq == std::string::npos) return;
  health_service->SetServingStatus(v.substr(0, eq), v.substr(eq + 1) == "1");
}

class Service final : public ringrpc::test::TestService::Service {
  Status Unary(ServerContext* ctx, const EchoRequest* req, EchoResponse* resp) override {
    calls.fetch_add(1);
    if (!Authorized(ctx))
      return Status(grpc::StatusCode::UNAUTHENTICATED, "bad or no bearer token");
    EchoMetadata(ctx);
    SetHealth(ctx);
    if (std::optional<Status> failed = FailOnPurpose(ctx)) return *failed;
    if (slow_percent > 0 && DrawSlow() && !SleepWatching(ctx, slow_ms)) {
      return Status(grpc::StatusCode::CANCELLED, "cancelled");
    }
    if (unary_delay_ms > 0 && !SleepWatching(ctx, unary_delay_ms)) {
      return Status(grpc::StatusCode::CANCELLED, "cancelled");
    }
    if (ctx->client_metadata().count("x-want-authority") != 0) {
      grpc::string_ref authority = ctx->ExperimentalGetAuthority();
      ctx->AddInitialMetadata("x-authority", std::string(authority.data(), authority.size()));
    }
    if (req->want_peer()) resp->set_peer(ctx->peer());
    if (req->sleep_ms() > 0 && !SleepWatching(ctx, req->sleep_ms())) {
      return Status(grpc::StatusCode::CANCELLED, "cancelled");
    }
    if (req->status_code() != 0) {
      return Status(static_cast<grpc::StatusCode>(req->status_code()), req->status_message());
    }
    if (req->response_size() > 0) {
      resp->set_payload(std::string(req->response_size(), 'r'));
    } else {
      resp->set_payload(req->payload());
    }
    return Status::OK;
  }

  Status ServerStream(ServerContext* ctx, const EchoRequest* req,
                      grpc::ServerWriter<EchoResponse>* writer) override {
    calls.fetch_add(1);
    EchoMetadata(ctx);
    if (std::optional<Status> failed = FailOnPurpose(ctx)) return *failed;
    // "x-fail-after-headers": initial metadata, then UNAVAILABLE (the call
    // was committed by the headers: a client must not retry it).
    if (!Md(ctx, "x-fail-after-headers").empty()) {
      writer->SendInitialMetadata();
      return Status(grpc::StatusCode::UNAVAILABLE, "failed after sending headers");
    }
    EchoResponse resp;
    resp.set_payload(std::string(req->response_size(), 's'));
    for (int i = 0; i < req->count(); ++i) {
      if (req->interval_ms() > 0 && !SleepWatching(ctx, req->interval_ms())) {
        return Status(grpc::StatusCode::CANCELLED, "cancelled");
      }
      if (ctx->IsCancelled()) {
        cancelled.fetch_add(1);
        return Status(grpc::StatusCode::CANCELLED, "cancelled");
      }
      resp.set_count(i);
      // A write fails only once the stream is gone: the client's RST can
      // reach grpc++ as a failed write before IsCancelled() says so.
      if (!writer->Write(resp, StreamWriteOptions(ctx, i))) {
        cancelled.fetch_add(1);
        return Status(grpc::StatusCode::CANCELLED, "cancelled");
      }
    }
    if (req->status_code() != 0) {
      return Status(static_cast<grpc::StatusCode>(req->status_code()), req->status_message());
    }
    return Status::OK;
  }

  Status ClientStream(ServerContext* ctx, grpc::ServerReader<EchoRequest>* reader,
                      EchoResponse* resp) override {
    calls.fetch_add(1);
    EchoMetadata(ctx);
    if (std::optional<Status> failed = FailOnPurpose(ctx)) return *failed;
    EchoRequest req;
    int count = 0;
    int64_t bytes = 0;
    while (reader->Read(&req)) {
      ++count;
      bytes += req.payload().size();
    }
    if (ctx->IsCancelled()) cancelled.fetch_add(1);
    resp->set_count(count);
    resp->set_total_bytes(bytes);
    return Status::OK;
  }

  Status Bidi(ServerContext* ctx,
              grpc::ServerReaderWriter<EchoResponse, EchoRequest>* stream) override {
    calls.fetch_add(1);
    EchoMetadata(ctx);
    if (std::optional<Status> failed = FailOnPurpose(ctx)) return *failed;
    EchoRequest req;
    int count = 0;
    while (stream->Read(&req)) {
      EchoResponse resp;
      resp.set_payload(req.payload());
      resp.set_count(count);
      if (!stream->Write(resp, StreamWriteOptions(ctx, count++))) break;
    }
    if (ctx->IsCancelled()) cancelled.fetch_add(1);
    return Status::OK;
  }

  Status Stats(ServerContext*, const ringrpc::test::StatsRequest*,
               ringrpc::test::StatsResponse* resp) override {
    resp->set_cancelled(cancelled.load());
    resp->set_calls(calls.load());
    return Status::OK;
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string listen = "127.0.0.1:0";
  std::string tls_cert, tls_key, tls_client_ca;  // files (PEM)
  bool no_gzip = false;                          // --no_gzip: refuse gzip-compressed requests
  bool with_health = false;
  int max_connection_age_ms = 0;  // --max_connection_age_ms=N: GOAWAY every connection at N ms
  std::string health_serving;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--health") == 0) with_health = true;
    if (std::strncmp(argv[i], "--slow_percent=", 15) == 0) slow_percent = std::atoi(argv[i] + 15);
    if (std::strncmp(argv[i], "--slow_ms=", 10) == 0) slow_ms = std::atoi(argv[i] + 10);
    if (std::strncmp(argv[i], "--health_serving=", 17) == 0) health_serving = argv[i] + 17;
    if (std::strcmp(argv[i], "--no_gzip") == 0) no_gzip = true;
    if (std::strncmp(argv[i], "--max_connection_age_ms=", 24) == 0) {
      max_connection_age_ms = std::atoi(argv[i] + 24);
    }
    if (std::strncmp(argv[i], "--require_token=", 16) == 0) required_token = argv[i] + 16;
    if (std::strncmp(argv[i], "--unary_delay_ms=", 17) == 0)
      unary_delay_ms = std::atoi(argv[i] + 17);
    if (std::strncmp(argv[i], "--listen=", 9) == 0) listen = argv[i] + 9;
    if (std::strncmp(argv[i], "--tls_cert=", 11) == 0) tls_cert = argv[i] + 11;
    if (std::strncmp(argv[i], "--tls_key=", 10) == 0) tls_key = argv[i] + 10;
    if (std::strncmp(argv[i], "--tls_client_ca=", 16) == 0) tls_client_ca = argv[i] + 16;
  }
  auto slurp = [](const std::string& path) {
    std::ifstream f(path);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  };
  Service service;
  grpc::EnableDefaultHealthCheckService(with_health);
  return ringrpc::testing::ServeUntilSigterm(
      "test_server", listen,
      [&]() -> std::shared_ptr<grpc::ServerCredentials> {
        if (tls_cert.empty()) return grpc::InsecureServerCredentials();
        // TLS; with a client CA, client certificates required.
        grpc::SslServerCredentialsOptions o(
            tls_client_ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                  : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
        o.pem_key_cert_pairs.push_back({slurp(tls_key), slurp(tls_cert)});
        if (!tls_client_ca.empty()) o.pem_root_certs = slurp(tls_client_ca);
        return grpc::SslServerCredentials(o);
      },
      [&](grpc::ServerBuilder& builder) {
        builder.SetMaxReceiveMessageSize(64 << 20);
        builder.SetMaxSendMessageSize(64 << 20);
        if (no_gzip) builder.SetCompressionAlgorithmSupportStatus(GRPC_COMPRESS_GZIP, false);
        if (max_connection_age_ms > 0) {
          // The way servers ask DNS clients to look again: GOAWAY at an age,
          // calls in flight given 10 s to finish.
          builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, max_connection_age_ms);
          builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, 10000);
        }
        builder.RegisterService(&service);
      },
      [&](grpc::Server& server) {
        health_service = server.GetHealthCheckService();
        if (health_service == nullptr) return;
        for (size_t start = 0; start < health_serving.size();) {
          size_t comma = health_serving.find(',', start);
          if (comma == std::string::npos) comma = health_serving.size();
          health_service->SetServingStatus(health_serving.substr(start, comma - start), true);
          start = comma + 1;
        }
      });
}
