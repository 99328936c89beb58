// TlsSessionCache without a connection: the latest session per address,
// a reference of the caller's own from Get, the least recently stored
// address dropped past the capacity, and the handshake counts.
#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include "ringrpc/client/transport/tls.h"

namespace ringrpc::transport {
namespace {

TEST(TlsSessionCache, KeepsTheLatestSessionPerAddressWithinItsCapacity) {
  TlsSessionCache cache(2);
  EXPECT_EQ(cache.Get("a:443"), nullptr);
  SSL_SESSION* a1 = SSL_SESSION_new();
  SSL_SESSION* a2 = SSL_SESSION_new();
  SSL_SESSION* b = SSL_SESSION_new();
  SSL_SESSION* c = SSL_SESSION_new();
  cache.Put("a:443", a1);
  cache.Put("a:443", a2);  // replaces a1 (freed)
  SSL_SESSION* got = cache.Get("a:443");
  EXPECT_EQ(got, a2);
  SSL_SESSION_free(got);  // the caller's reference; the cache keeps its own
  EXPECT_EQ(cache.Get("a:443"), a2);
  SSL_SESSION_free(a2);
  cache.Put("b:443", b);
  cache.Put("c:443", c);  // over the capacity: "a", stored first, goes
  EXPECT_EQ(cache.Get("a:443"), nullptr);
  SSL_SESSION* still = cache.Get("b:443");
  EXPECT_EQ(still, b);
  SSL_SESSION_free(still);
  cache.CountHandshake(false);
  cache.CountHandshake(true);
  cache.CountHandshake(true);
  EXPECT_EQ(cache.full(), 1u);
  EXPECT_EQ(cache.resumed(), 2u);
}

}  // namespace
}  // namespace ringrpc::transport
