// grpc's channel argument keys (GRPC_ARG_KEEPALIVE_TIME_MS, ...), the
// macros grpc++ code passes to ChannelArguments::SetInt / SetString, with
// grpc's values; each is defined only where grpc's own header has not.
//
//   args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
//
// Which of them ringrpc reads, and how, is in docs/channel-args.md; a key
// ringrpc does not read is accepted and ignored, as grpc++ ignores keys it
// does not know.
#ifndef RINGRPC_CLIENT_CHANNEL_ARG_NAMES_H_
#define RINGRPC_CLIENT_CHANNEL_ARG_NAMES_H_

// clang-format off
#ifndef GRPC_ARG_ENABLE_CENSUS
#define GRPC_ARG_ENABLE_CENSUS "grpc.census"
#endif
#ifndef GRPC_ARG_ENABLE_LOAD_REPORTING
#define GRPC_ARG_ENABLE_LOAD_REPORTING "grpc.loadreporting"
#endif
#ifndef GRPC_ARG_MINIMAL_STACK
#define GRPC_ARG_MINIMAL_STACK "grpc.minimal_stack"
#endif
#ifndef GRPC_ARG_MAX_CONCURRENT_STREAMS
#define GRPC_ARG_MAX_CONCURRENT_STREAMS "grpc.max_concurrent_streams"
#endif
#ifndef GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH
#define GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH "grpc.max_receive_message_length"
#endif
#ifndef GRPC_ARG_MAX_MESSAGE_LENGTH
#define GRPC_ARG_MAX_MESSAGE_LENGTH GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH
#endif
#ifndef GRPC_ARG_MAX_SEND_MESSAGE_LENGTH
#define GRPC_ARG_MAX_SEND_MESSAGE_LENGTH "grpc.max_send_message_length"
#endif
#ifndef GRPC_ARG_MAX_CONNECTION_IDLE_MS
#define GRPC_ARG_MAX_CONNECTION_IDLE_MS "grpc.max_connection_idle_ms"
#endif
#ifndef GRPC_ARG_MAX_CONNECTION_AGE_MS
#define GRPC_ARG_MAX_CONNECTION_AGE_MS "grpc.max_connection_age_ms"
#endif
#ifndef GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS
#define GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS "grpc.max_connection_age_grace_ms"
#endif
#ifndef GRPC_ARG_CLIENT_IDLE_TIMEOUT_MS
#define GRPC_ARG_CLIENT_IDLE_TIMEOUT_MS "grpc.client_idle_timeout_ms"
#endif
#ifndef GRPC_ARG_ENABLE_PER_MESSAGE_COMPRESSION
#define GRPC_ARG_ENABLE_PER_MESSAGE_COMPRESSION "grpc.per_message_compression"
#endif
#ifndef GRPC_ARG_ENABLE_PER_MESSAGE_DECOMPRESSION
#define GRPC_ARG_ENABLE_PER_MESSAGE_DECOMPRESSION "grpc.per_message_decompression"
#endif
#ifndef GRPC_ARG_ENABLE_DEADLINE_CHECKS
#define GRPC_ARG_ENABLE_DEADLINE_CHECKS "grpc.enable_deadline_checking"
#endif
#ifndef GRPC_ARG_HTTP2_INITIAL_SEQUENCE_NUMBER
#define GRPC_ARG_HTTP2_INITIAL_SEQUENCE_NUMBER "grpc.http2.initial_sequence_number"
#endif
#ifndef GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES
#define GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES "grpc.http2.lookahead_bytes"
#endif
#ifndef GRPC_ARG_HTTP2_HPACK_TABLE_SIZE_DECODER
#define GRPC_ARG_HTTP2_HPACK_TABLE_SIZE_DECODER "grpc.http2.hpack_table_size.decoder"
#endif
#ifndef GRPC_ARG_HTTP2_HPACK_TABLE_SIZE_ENCODER
#define GRPC_ARG_HTTP2_HPACK_TABLE_SIZE_ENCODER "grpc.http2.hpack_table_size.encoder"
#endif
#ifndef GRPC_ARG_HTTP2_MAX_FRAME_SIZE
#define GRPC_ARG_HTTP2_MAX_FRAME_SIZE "grpc.http2.max_frame_size"
#endif
#ifndef GRPC_ARG_HTTP2_BDP_PROBE
#define GRPC_ARG_HTTP2_BDP_PROBE "grpc.http2.bdp_probe"
#endif
#ifndef GRPC_ARG_HTTP2_MIN_SENT_PING_INTERVAL_WITHOUT_DATA_MS
#define GRPC_ARG_HTTP2_MIN_SENT_PING_INTERVAL_WITHOUT_DATA_MS "grpc.http2.min_time_between_pings_ms"
#endif
#ifndef GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS
#define GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS "grpc.http2.min_ping_interval_without_data_ms"
#endif
#ifndef GRPC_ARG_HTTP2_SCHEME
#define GRPC_ARG_HTTP2_SCHEME "grpc.http2_scheme"
#endif
#ifndef GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA
#define GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA "grpc.http2.max_pings_without_data"
#endif
#ifndef GRPC_ARG_HTTP2_MAX_PING_STRIKES
#define GRPC_ARG_HTTP2_MAX_PING_STRIKES "grpc.http2.max_ping_strikes"
#endif
#ifndef GRPC_ARG_HTTP2_WRITE_BUFFER_SIZE
#define GRPC_ARG_HTTP2_WRITE_BUFFER_SIZE "grpc.http2.write_buffer_size"
#endif
#ifndef GRPC_ARG_HTTP2_ENABLE_TRUE_BINARY
#define GRPC_ARG_HTTP2_ENABLE_TRUE_BINARY "grpc.http2.true_binary"
#endif
#ifndef GRPC_ARG_KEEPALIVE_TIME_MS
#define GRPC_ARG_KEEPALIVE_TIME_MS "grpc.keepalive_time_ms"
#endif
#ifndef GRPC_ARG_KEEPALIVE_TIMEOUT_MS
#define GRPC_ARG_KEEPALIVE_TIMEOUT_MS "grpc.keepalive_timeout_ms"
#endif
#ifndef GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS
#define GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS "grpc.keepalive_permit_without_calls"
#endif
#ifndef GRPC_ARG_DEFAULT_AUTHORITY
#define GRPC_ARG_DEFAULT_AUTHORITY "grpc.default_authority"
#endif
#ifndef GRPC_ARG_PRIMARY_USER_AGENT_STRING
#define GRPC_ARG_PRIMARY_USER_AGENT_STRING "grpc.primary_user_agent"
#endif
#ifndef GRPC_ARG_SECONDARY_USER_AGENT_STRING
#define GRPC_ARG_SECONDARY_USER_AGENT_STRING "grpc.secondary_user_agent"
#endif
#ifndef GRPC_ARG_MIN_RECONNECT_BACKOFF_MS
#define GRPC_ARG_MIN_RECONNECT_BACKOFF_MS "grpc.min_reconnect_backoff_ms"
#endif
#ifndef GRPC_ARG_MAX_RECONNECT_BACKOFF_MS
#define GRPC_ARG_MAX_RECONNECT_BACKOFF_MS "grpc.max_reconnect_backoff_ms"
#endif
#ifndef GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS
#define GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS "grpc.initial_reconnect_backoff_ms"
#endif
#ifndef GRPC_ARG_DNS_MIN_TIME_BETWEEN_RESOLUTIONS_MS
#define GRPC_ARG_DNS_MIN_TIME_BETWEEN_RESOLUTIONS_MS "grpc.dns_min_time_between_resolutions_ms"
#endif
#ifndef GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS
#define GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS "grpc.server_handshake_timeout_ms"
#endif
#ifndef GRPC_SSL_TARGET_NAME_OVERRIDE_ARG
#define GRPC_SSL_TARGET_NAME_OVERRIDE_ARG "grpc.ssl_target_name_override"
#endif
#ifndef GRPC_SSL_SESSION_CACHE_ARG
#define GRPC_SSL_SESSION_CACHE_ARG "grpc.ssl_session_cache"
#endif
#ifndef GRPC_ARG_TSI_MAX_FRAME_SIZE
#define GRPC_ARG_TSI_MAX_FRAME_SIZE "grpc.tsi.max_frame_size"
#endif
#ifndef GRPC_ARG_MAX_METADATA_SIZE
#define GRPC_ARG_MAX_METADATA_SIZE "grpc.max_metadata_size"
#endif
#ifndef GRPC_ARG_ALLOW_REUSEPORT
#define GRPC_ARG_ALLOW_REUSEPORT "grpc.so_reuseport"
#endif
#ifndef GRPC_ARG_RESOURCE_QUOTA
#define GRPC_ARG_RESOURCE_QUOTA "grpc.resource_quota"
#endif
#ifndef GRPC_ARG_EXPAND_WILDCARD_ADDRS
#define GRPC_ARG_EXPAND_WILDCARD_ADDRS "grpc.expand_wildcard_addrs"
#endif
#ifndef GRPC_ARG_SERVICE_CONFIG
#define GRPC_ARG_SERVICE_CONFIG "grpc.service_config"
#endif
#ifndef GRPC_ARG_SERVICE_CONFIG_DISABLE_RESOLUTION
#define GRPC_ARG_SERVICE_CONFIG_DISABLE_RESOLUTION "grpc.service_config_disable_resolution"
#endif
#ifndef GRPC_ARG_LB_POLICY_NAME
#define GRPC_ARG_LB_POLICY_NAME "grpc.lb_policy_name"
#endif
#ifndef GRPC_ARG_SOCKET_MUTATOR
#define GRPC_ARG_SOCKET_MUTATOR "grpc.socket_mutator"
#endif
#ifndef GRPC_ARG_SOCKET_FACTORY
#define GRPC_ARG_SOCKET_FACTORY "grpc.socket_factory"
#endif
#ifndef GRPC_ARG_MAX_CHANNEL_TRACE_EVENT_MEMORY_PER_NODE
#define GRPC_ARG_MAX_CHANNEL_TRACE_EVENT_MEMORY_PER_NODE "grpc.max_channel_trace_event_memory_per_node"
#endif
#ifndef GRPC_ARG_ENABLE_CHANNELZ
#define GRPC_ARG_ENABLE_CHANNELZ "grpc.enable_channelz"
#endif
#ifndef GRPC_ARG_USE_CRONET_PACKET_COALESCING
#define GRPC_ARG_USE_CRONET_PACKET_COALESCING "grpc.use_cronet_packet_coalescing"
#endif
#ifndef GRPC_ARG_TCP_READ_CHUNK_SIZE
#define GRPC_ARG_TCP_READ_CHUNK_SIZE "grpc.experimental.tcp_read_chunk_size"
#endif
#ifndef GRPC_ARG_TCP_MIN_READ_CHUNK_SIZE
#define GRPC_ARG_TCP_MIN_READ_CHUNK_SIZE "grpc.experimental.tcp_min_read_chunk_size"
#endif
#ifndef GRPC_ARG_TCP_MAX_READ_CHUNK_SIZE
#define GRPC_ARG_TCP_MAX_READ_CHUNK_SIZE "grpc.experimental.tcp_max_read_chunk_size"
#endif
#ifndef GRPC_ARG_TCP_TX_ZEROCOPY_ENABLED
#define GRPC_ARG_TCP_TX_ZEROCOPY_ENABLED "grpc.experimental.tcp_tx_zerocopy_enabled"
#endif
#ifndef GRPC_ARG_TCP_TX_ZEROCOPY_SEND_BYTES_THRESHOLD
#define GRPC_ARG_TCP_TX_ZEROCOPY_SEND_BYTES_THRESHOLD "grpc.experimental.tcp_tx_zerocopy_send_bytes_threshold"
#endif
#ifndef GRPC_ARG_TCP_TX_ZEROCOPY_MAX_SIMULT_SENDS
#define GRPC_ARG_TCP_TX_ZEROCOPY_MAX_SIMULT_SENDS "grpc.experimental.tcp_tx_zerocopy_max_simultaneous_sends"
#endif
#ifndef GRPC_ARG_GRPCLB_CALL_TIMEOUT_MS
#define GRPC_ARG_GRPCLB_CALL_TIMEOUT_MS "grpc.grpclb_call_timeout_ms"
#endif
#ifndef GRPC_ARG_TEST_ONLY_DO_NOT_USE_IN_PROD_XDS_BOOTSTRAP_CONFIG
#define GRPC_ARG_TEST_ONLY_DO_NOT_USE_IN_PROD_XDS_BOOTSTRAP_CONFIG "grpc.TEST_ONLY_DO_NOT_USE_IN_PROD.xds_bootstrap_config"
#endif
#ifndef GRPC_ARG_GRPCLB_FALLBACK_TIMEOUT_MS
#define GRPC_ARG_GRPCLB_FALLBACK_TIMEOUT_MS "grpc.grpclb_fallback_timeout_ms"
#endif
#ifndef GRPC_ARG_EXPERIMENTAL_GRPCLB_CHANNEL_ARGS
#define GRPC_ARG_EXPERIMENTAL_GRPCLB_CHANNEL_ARGS "grpc.experimental.grpclb_channel_args"
#endif
#ifndef GRPC_ARG_PRIORITY_FAILOVER_TIMEOUT_MS
#define GRPC_ARG_PRIORITY_FAILOVER_TIMEOUT_MS "grpc.priority_failover_timeout_ms"
#endif
#ifndef GRPC_ARG_WORKAROUND_CRONET_COMPRESSION
#define GRPC_ARG_WORKAROUND_CRONET_COMPRESSION "grpc.workaround.cronet_compression"
#endif
#ifndef GRPC_ARG_OPTIMIZATION_TARGET
#define GRPC_ARG_OPTIMIZATION_TARGET "grpc.optimization_target"
#endif
#ifndef GRPC_ARG_ENABLE_RETRIES
#define GRPC_ARG_ENABLE_RETRIES "grpc.enable_retries"
#endif
#ifndef GRPC_ARG_EXPERIMENTAL_ENABLE_HEDGING
#define GRPC_ARG_EXPERIMENTAL_ENABLE_HEDGING "grpc.experimental.enable_hedging"
#endif
#ifndef GRPC_ARG_PER_RPC_RETRY_BUFFER_SIZE
#define GRPC_ARG_PER_RPC_RETRY_BUFFER_SIZE "grpc.per_rpc_retry_buffer_size"
#endif
#ifndef GRPC_ARG_MOBILE_LOG_CONTEXT
#define GRPC_ARG_MOBILE_LOG_CONTEXT "grpc.mobile_log_context"
#endif
#ifndef GRPC_ARG_DISABLE_CLIENT_AUTHORITY_FILTER
#define GRPC_ARG_DISABLE_CLIENT_AUTHORITY_FILTER "grpc.disable_client_authority_filter"
#endif
#ifndef GRPC_ARG_ENABLE_HTTP_PROXY
#define GRPC_ARG_ENABLE_HTTP_PROXY "grpc.enable_http_proxy"
#endif
#ifndef GRPC_ARG_HTTP_PROXY
#define GRPC_ARG_HTTP_PROXY "grpc.http_proxy"
#endif
#ifndef GRPC_ARG_SURFACE_USER_AGENT
#define GRPC_ARG_SURFACE_USER_AGENT "grpc.surface_user_agent"
#endif
#ifndef GRPC_ARG_INHIBIT_HEALTH_CHECKING
#define GRPC_ARG_INHIBIT_HEALTH_CHECKING "grpc.inhibit_health_checking"
#endif
#ifndef GRPC_ARG_DNS_ENABLE_SRV_QUERIES
#define GRPC_ARG_DNS_ENABLE_SRV_QUERIES "grpc.dns_enable_srv_queries"
#endif
#ifndef GRPC_ARG_DNS_ARES_QUERY_TIMEOUT_MS
#define GRPC_ARG_DNS_ARES_QUERY_TIMEOUT_MS "grpc.dns_ares_query_timeout"
#endif
#ifndef GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL
#define GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL "grpc.use_local_subchannel_pool"
#endif
#ifndef GRPC_ARG_CHANNEL_POOL_DOMAIN
#define GRPC_ARG_CHANNEL_POOL_DOMAIN "grpc.channel_pooling_domain"
#endif
#ifndef GRPC_ARG_CHANNEL_ID
#define GRPC_ARG_CHANNEL_ID "grpc.channel_id"
#endif
#ifndef GRPC_ARG_AUTHORIZATION_POLICY_PROVIDER
#define GRPC_ARG_AUTHORIZATION_POLICY_PROVIDER "grpc.authorization_policy_provider"
#endif
#ifndef GRPC_ARG_SERVER_CONFIG_CHANGE_DRAIN_GRACE_TIME_MS
#define GRPC_ARG_SERVER_CONFIG_CHANGE_DRAIN_GRACE_TIME_MS "grpc.experimental.server_config_change_drain_grace_time_ms"
#endif
// clang-format on

#endif  // RINGRPC_CLIENT_CHANNEL_ARG_NAMES_H_
