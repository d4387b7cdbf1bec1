//! nsqrd's integration tests, in one binary: each module is one area of behaviour, and the
//! `*_common` modules are the harnesses they share. Most tests run this build's nsqrd as a
//! separate process on ephemeral loopback ports (or any nsqd-compatible binary named by
//! `NSQD_BIN`), so tests that run in parallel in this one process share nothing but the harness.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod http_common;
mod kv_common;
mod layers_common;
mod lookupd_common;
mod proc_common;

mod cluster_channels;
mod cluster_in_process;
mod cluster_members;
mod cluster_new_channels;
mod cluster_replicated;
mod cluster_takeover;
mod cluster_tls;
mod durability_compat;
mod durability_crash;
mod durability_disk_full;
mod durability_restart;
mod hostile;
mod http_config;
mod http_consume;
mod http_conventions;
mod http_limits;
mod http_metrics;
mod http_pub;
mod http_queue_config;
mod http_stats;
mod http_topic_channel;
mod in_process;
mod kv_commands;
mod kv_events;
mod kv_in_process;
mod kv_persistence;
mod kv_protocol;
mod lookupd_late_start;
mod lookupd_registration;
mod queues_tcp;
mod smoke;
mod startup_flags;
mod startup_warnings;
mod statsd;
mod tcp_auth;
mod tcp_compression;
mod tcp_handshake_framing;
mod tcp_heartbeat;
mod tcp_identify;
mod tcp_lifecycle;
mod tcp_pub;
mod tcp_requeue_timeout;
mod tcp_sub_delivery;
mod tcp_tls;
mod unix_socket;
