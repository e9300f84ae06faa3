//! INFO's fields under the names oliver006/redis_exporter gives them (its
//! `metricMapGauges` and `metricMapCounters`), for the fields Skein's INFO has. Data only.

use super::exposition::Kind;

/// INFO field -> (exporter's name without the `redis_` prefix, type). Fields the exporter
/// does not export are not listed (nor exported).
pub const FIELDS: &[(&str, &str, Kind)] = &[
    // Server
    ("uptime_in_seconds", "uptime_in_seconds", Kind::Gauge),
    ("process_id", "process_id", Kind::Gauge),
    ("io_threads_active", "io_threads_active", Kind::Gauge),
    // Clients
    ("connected_clients", "connected_clients", Kind::Gauge),
    ("blocked_clients", "blocked_clients", Kind::Gauge),
    ("maxclients", "max_clients", Kind::Gauge),
    ("tracking_clients", "tracking_clients", Kind::Gauge),
    (
        "clients_in_timeout_table",
        "clients_in_timeout_table",
        Kind::Gauge,
    ),
    (
        "client_recent_max_output_buffer",
        "client_recent_max_output_buffer_bytes",
        Kind::Gauge,
    ),
    (
        "client_recent_max_input_buffer",
        "client_recent_max_input_buffer_bytes",
        Kind::Gauge,
    ),
    // Memory
    ("used_memory", "memory_used_bytes", Kind::Gauge),
    ("used_memory_rss", "memory_used_rss_bytes", Kind::Gauge),
    ("used_memory_peak", "memory_used_peak_bytes", Kind::Gauge),
    ("used_memory_lua", "memory_used_lua_bytes", Kind::Gauge),
    (
        "used_memory_vm_eval",
        "memory_used_vm_eval_bytes",
        Kind::Gauge,
    ),
    (
        "used_memory_scripts_eval",
        "memory_used_scripts_eval_bytes",
        Kind::Gauge,
    ),
    (
        "used_memory_overhead",
        "memory_used_overhead_bytes",
        Kind::Gauge,
    ),
    (
        "used_memory_startup",
        "memory_used_startup_bytes",
        Kind::Gauge,
    ),
    (
        "used_memory_dataset",
        "memory_used_dataset_bytes",
        Kind::Gauge,
    ),
    (
        "number_of_cached_scripts",
        "number_of_cached_scripts",
        Kind::Gauge,
    ),
    ("number_of_functions", "number_of_functions", Kind::Gauge),
    (
        "used_memory_vm_functions",
        "memory_used_vm_functions_bytes",
        Kind::Gauge,
    ),
    (
        "used_memory_scripts",
        "memory_used_scripts_bytes",
        Kind::Gauge,
    ),
    (
        "used_memory_functions",
        "memory_used_functions_bytes",
        Kind::Gauge,
    ),
    ("used_memory_vm_total", "memory_used_vm_total", Kind::Gauge),
    ("maxmemory", "memory_max_bytes", Kind::Gauge),
    ("allocator_active", "allocator_active_bytes", Kind::Gauge),
    (
        "allocator_allocated",
        "allocator_allocated_bytes",
        Kind::Gauge,
    ),
    (
        "allocator_resident",
        "allocator_resident_bytes",
        Kind::Gauge,
    ),
    ("allocator_frag_ratio", "allocator_frag_ratio", Kind::Gauge),
    ("allocator_frag_bytes", "allocator_frag_bytes", Kind::Gauge),
    ("allocator_rss_ratio", "allocator_rss_ratio", Kind::Gauge),
    ("allocator_rss_bytes", "allocator_rss_bytes", Kind::Gauge),
    (
        "mem_fragmentation_ratio",
        "mem_fragmentation_ratio",
        Kind::Gauge,
    ),
    (
        "mem_fragmentation_bytes",
        "mem_fragmentation_bytes",
        Kind::Gauge,
    ),
    ("mem_clients_slaves", "mem_clients_slaves", Kind::Gauge),
    ("mem_clients_normal", "mem_clients_normal", Kind::Gauge),
    ("mem_cluster_links", "mem_cluster_links_bytes", Kind::Gauge),
    ("mem_aof_buffer", "mem_aof_buffer_bytes", Kind::Gauge),
    (
        "mem_replication_backlog",
        "mem_replication_backlog_bytes",
        Kind::Gauge,
    ),
    (
        "mem_total_replication_buffers",
        "mem_total_replication_buffers_bytes",
        Kind::Gauge,
    ),
    (
        "mem_not_counted_for_evict",
        "mem_not_counted_for_eviction_bytes",
        Kind::Gauge,
    ),
    (
        "lazyfree_pending_objects",
        "lazyfree_pending_objects",
        Kind::Gauge,
    ),
    ("lazyfreed_objects", "lazyfreed_objects", Kind::Gauge),
    (
        "active_defrag_running",
        "active_defrag_running",
        Kind::Gauge,
    ),
    // Persistence
    ("loading", "loading_dump_file", Kind::Gauge),
    ("async_loading", "async_loading", Kind::Gauge),
    (
        "rdb_changes_since_last_save",
        "rdb_changes_since_last_save",
        Kind::Gauge,
    ),
    (
        "rdb_bgsave_in_progress",
        "rdb_bgsave_in_progress",
        Kind::Gauge,
    ),
    (
        "rdb_last_save_time",
        "rdb_last_save_timestamp_seconds",
        Kind::Gauge,
    ),
    (
        "rdb_last_bgsave_status",
        "rdb_last_bgsave_status",
        Kind::Gauge,
    ),
    (
        "rdb_last_bgsave_time_sec",
        "rdb_last_bgsave_duration_sec",
        Kind::Gauge,
    ),
    (
        "rdb_current_bgsave_time_sec",
        "rdb_current_bgsave_duration_sec",
        Kind::Gauge,
    ),
    ("rdb_saves", "rdb_saves_total", Kind::Gauge),
    ("rdb_last_cow_size", "rdb_last_cow_size_bytes", Kind::Gauge),
    (
        "rdb_last_load_keys_expired",
        "rdb_last_load_expired_keys",
        Kind::Gauge,
    ),
    (
        "rdb_last_load_keys_loaded",
        "rdb_last_load_loaded_keys",
        Kind::Gauge,
    ),
    ("aof_enabled", "aof_enabled", Kind::Gauge),
    (
        "aof_rewrite_in_progress",
        "aof_rewrite_in_progress",
        Kind::Gauge,
    ),
    (
        "aof_rewrite_scheduled",
        "aof_rewrite_scheduled",
        Kind::Gauge,
    ),
    (
        "aof_last_rewrite_time_sec",
        "aof_last_rewrite_duration_sec",
        Kind::Gauge,
    ),
    (
        "aof_current_rewrite_time_sec",
        "aof_current_rewrite_duration_sec",
        Kind::Gauge,
    ),
    ("aof_last_cow_size", "aof_last_cow_size_bytes", Kind::Gauge),
    (
        "aof_last_bgrewrite_status",
        "aof_last_bgrewrite_status",
        Kind::Gauge,
    ),
    (
        "aof_last_write_status",
        "aof_last_write_status",
        Kind::Gauge,
    ),
    (
        "module_fork_in_progress",
        "module_fork_in_progress",
        Kind::Gauge,
    ),
    (
        "module_fork_last_cow_size",
        "module_fork_last_cow_size",
        Kind::Gauge,
    ),
    // Stats
    (
        "total_connections_received",
        "connections_received_total",
        Kind::Counter,
    ),
    (
        "total_commands_processed",
        "commands_processed_total",
        Kind::Counter,
    ),
    (
        "rejected_connections",
        "rejected_connections_total",
        Kind::Counter,
    ),
    (
        "total_net_input_bytes",
        "net_input_bytes_total",
        Kind::Counter,
    ),
    (
        "total_net_output_bytes",
        "net_output_bytes_total",
        Kind::Counter,
    ),
    (
        "total_net_repl_input_bytes",
        "net_repl_input_bytes_total",
        Kind::Counter,
    ),
    (
        "total_net_repl_output_bytes",
        "net_repl_output_bytes_total",
        Kind::Counter,
    ),
    ("expired_keys", "expired_keys_total", Kind::Counter),
    (
        "expired_stale_perc",
        "expired_stale_percentage",
        Kind::Gauge,
    ),
    (
        "expired_time_cap_reached_count",
        "expired_time_cap_reached_total",
        Kind::Counter,
    ),
    (
        "expire_cycle_cpu_milliseconds",
        "expire_cycle_cpu_time_ms_total",
        Kind::Counter,
    ),
    ("evicted_keys", "evicted_keys_total", Kind::Counter),
    ("evicted_clients", "evicted_clients_total", Kind::Counter),
    (
        "total_eviction_exceeded_time",
        "eviction_exceeded_time_ms_total",
        Kind::Counter,
    ),
    (
        "current_eviction_exceeded_time",
        "current_eviction_exceeded_time_ms",
        Kind::Gauge,
    ),
    ("keyspace_hits", "keyspace_hits_total", Kind::Counter),
    ("keyspace_misses", "keyspace_misses_total", Kind::Counter),
    ("pubsub_channels", "pubsub_channels", Kind::Gauge),
    ("pubsub_patterns", "pubsub_patterns", Kind::Gauge),
    ("pubsubshard_channels", "pubsubshard_channels", Kind::Gauge),
    ("latest_fork_usec", "latest_fork_usec", Kind::Gauge),
    (
        "migrate_cached_sockets",
        "migrate_cached_sockets_total",
        Kind::Gauge,
    ),
    ("active_defrag_hits", "defrag_hits", Kind::Gauge),
    ("active_defrag_misses", "defrag_misses", Kind::Gauge),
    ("active_defrag_key_hits", "defrag_key_hits", Kind::Gauge),
    ("active_defrag_key_misses", "defrag_key_misses", Kind::Gauge),
    ("tracking_total_keys", "tracking_total_keys", Kind::Gauge),
    ("tracking_total_items", "tracking_total_items", Kind::Gauge),
    (
        "tracking_total_prefixes",
        "tracking_total_prefixes",
        Kind::Gauge,
    ),
    (
        "unexpected_error_replies",
        "unexpected_error_replies",
        Kind::Counter,
    ),
    ("total_error_replies", "total_error_replies", Kind::Counter),
    (
        "dump_payload_sanitizations",
        "dump_payload_sanitizations",
        Kind::Counter,
    ),
    (
        "total_reads_processed",
        "total_reads_processed",
        Kind::Counter,
    ),
    (
        "total_writes_processed",
        "total_writes_processed",
        Kind::Counter,
    ),
    (
        "io_threaded_reads_processed",
        "io_threaded_reads_processed",
        Kind::Counter,
    ),
    (
        "io_threaded_writes_processed",
        "io_threaded_writes_processed",
        Kind::Counter,
    ),
    (
        "reply_buffer_shrinks",
        "reply_buffer_shrinks_total",
        Kind::Counter,
    ),
    (
        "reply_buffer_expands",
        "reply_buffer_expands_total",
        Kind::Counter,
    ),
    // Replication
    ("connected_slaves", "connected_slaves", Kind::Gauge),
    (
        "repl_backlog_size",
        "replication_backlog_bytes",
        Kind::Gauge,
    ),
    ("repl_backlog_active", "repl_backlog_is_active", Kind::Gauge),
    (
        "repl_backlog_first_byte_offset",
        "repl_backlog_first_byte_offset",
        Kind::Gauge,
    ),
    (
        "repl_backlog_histlen",
        "repl_backlog_history_bytes",
        Kind::Gauge,
    ),
    ("master_repl_offset", "master_repl_offset", Kind::Gauge),
    ("second_repl_offset", "second_repl_offset", Kind::Gauge),
    (
        "slave_expires_tracked_keys",
        "slave_expires_tracked_keys",
        Kind::Gauge,
    ),
    ("sync_full", "replica_resyncs_full", Kind::Gauge),
    (
        "sync_partial_ok",
        "replica_partial_resync_accepted",
        Kind::Gauge,
    ),
    (
        "sync_partial_err",
        "replica_partial_resync_denied",
        Kind::Gauge,
    ),
    // CPU
    ("used_cpu_sys", "cpu_sys_seconds_total", Kind::Counter),
    ("used_cpu_user", "cpu_user_seconds_total", Kind::Counter),
    (
        "used_cpu_sys_children",
        "cpu_sys_children_seconds_total",
        Kind::Counter,
    ),
    (
        "used_cpu_user_children",
        "cpu_user_children_seconds_total",
        Kind::Counter,
    ),
    (
        "used_cpu_sys_main_thread",
        "cpu_sys_main_thread_seconds_total",
        Kind::Counter,
    ),
    (
        "used_cpu_user_main_thread",
        "cpu_user_main_thread_seconds_total",
        Kind::Counter,
    ),
    // Cluster
    ("cluster_enabled", "cluster_enabled", Kind::Gauge),
];
