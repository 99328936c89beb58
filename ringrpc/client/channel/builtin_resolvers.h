// ringrpc/client/channel/builtin_resolvers.h — the resolvers ringrpc's own
// target schemes name, registered in the public scheme registry
// (ringrpc/client/resolver.h) like a program's: dns (c-ares, or a fixed
// list for an IP literal or localhost) and ipv4, ipv6, unix, unix-abstract
// (the list the target spells).
//
// Threading: any thread; registering happens once.
//
//   RegisterBuiltinResolvers();  // before a lookup; a program's own stay
//   ResolverFactory dns = FindResolverFactory("dns");
#ifndef RINGRPC_CLIENT_CHANNEL_BUILTIN_RESOLVERS_H_
#define RINGRPC_CLIENT_CHANNEL_BUILTIN_RESOLVERS_H_

namespace ringrpc::channel {

// Registers each scheme not registered already (a program may replace
// one of ringrpc's by registering it first, or later).
void RegisterBuiltinResolvers();

}  // namespace ringrpc::channel

#endif  // RINGRPC_CLIENT_CHANNEL_BUILTIN_RESOLVERS_H_
