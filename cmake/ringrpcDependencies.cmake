# What ringrpc links, found the same way when ringrpc is built and when an
# installed ringrpc is used (ringrpcConfig.cmake includes this file). Sets
# RINGRPC_LINK_LIBRARIES.
include(CMakeFindDependencyMacro)
# In a consumer's find_package(ringrpc): find_dependency (a missing package
# makes ringrpc "not found", saying which); in ringrpc's own build: REQUIRED.
macro(_ringrpc_find_package)
  if(CMAKE_FIND_PACKAGE_NAME STREQUAL "ringrpc")
    find_dependency(${ARGV})
  else()
    find_package(${ARGV} REQUIRED)
  endif()
endmacro()
_ringrpc_find_package(Threads)
_ringrpc_find_package(Protobuf)
_ringrpc_find_package(absl CONFIG)
_ringrpc_find_package(OpenSSL)
_ringrpc_find_package(ZLIB)
_ringrpc_find_package(PkgConfig)
pkg_check_modules(RINGRPC_URING REQUIRED IMPORTED_TARGET liburing)
pkg_check_modules(RINGRPC_NGHTTP2 REQUIRED IMPORTED_TARGET libnghttp2)
pkg_check_modules(RINGRPC_CARES REQUIRED IMPORTED_TARGET libcares)
set(RINGRPC_LINK_LIBRARIES
  protobuf::libprotobuf
  absl::status
  absl::statusor
  absl::strings
  absl::str_format
  absl::synchronization
  absl::time
  absl::hash
  absl::raw_hash_set
  absl::base
  PkgConfig::RINGRPC_URING
  PkgConfig::RINGRPC_NGHTTP2
  PkgConfig::RINGRPC_CARES
  OpenSSL::SSL
  OpenSSL::Crypto
  ZLIB::ZLIB
  Threads::Threads)
