"""Names vulture reports as unused that are used where it cannot see (tests/contracts/test_dead_code.py runs
vulture over src/rigcheck and this file at --min-confidence 60 and expects nothing). Each group says who uses its
names. A name nothing uses is removed from the code, never added here."""

# ruff: noqa: B018, F821

# pydantic models: a field is a key of the JSON documents and schemas scripts read (docs/*.md), filled by the code
# that builds the document and written by pydantic
# model/bench.py
(
    in_place_time_us,
    in_place_algbw_gbps,
    in_place_max_error,
    ceiling_gbps,
    fraction_of_ceiling,
    peak_source,
    max_rel_error,
    tflops_min,
    peak_memory_gbps,
    local_cpus_source,
    fraction_of_pcie,
    bidirectional_gbps,
    latency_us,
    theoretical_gbps,
    theoretical_source,
    fraction_of_theoretical,
    warmup_steps,
    timed_steps,
    global_batch_size,
    tokens_per_s,
    step_time_median_ms,
    step_time_p10_ms,
    step_time_p90_ms,
    step_time_min_ms,
    step_time_max_ms,
    peak_memory_bytes,
    peak_memory_kind,
    loss_first,
    loss_final,
    loss_finite,
    loss_decreased,
    block_size_bytes,
    file_bytes,
    time_s_median,
    nvme_controller,
    channel_lines,
    nccl_p2p_disable,
)
# model/bench_source.py
band_floor_gbps
# model/burn.py
minutes_requested
# model/nccl_log.py
(channel_id, conn_index, nccl_versions, nranks_seen, ranks_seen)
# model/plan.py
(
    shm_busbw_gbps,
    shm_busbw_source,
    params_source,
    wire_formula,
    wire_source,
    measured_nvlink_s,
    measured_no_p2p_s,
    measured_difference_s,
    measured_difference_per_step_s,
    nvlink_busbw_gbps,
    nvlink_busbw_source,
    nvlink_comm_s_per_run,
    shm_assumption,
    implied_shm_busbw_gbps,
    implied_shm_note,
    compute_flops_per_step_per_gpu,
    compute_source,
    fp32_peak_tflops,
    fp32_peak_source,
    assumed_mfu,
    compute_s_per_step_estimate,
    measured_nvlink_s_per_step,
    implied_mfu_nvlink_run,
    backward_s_per_step_estimate,
    available_bytes,
    available_source,
    largest_layer_params,
    largest_layer_source,
    buffer_factor,
    host_h2d_gbps,
    host_d2h_gbps,
    nvme_read_gbps,
    nvme_write_gbps,
    host_time_s,
    nvme_time_s,
    offload_time_s,
    offload_to_compute,
    bytes_per_element,
    flops_per_step_per_gpu,
    tflops_source,
    exposed_comm_s,
)
# model/power_plan.py
(cpu_watts_assumed, required_w)
# model/power_thermal.py
power_min_limit_w
# model/snapshot.py
(
    memory_total_mib,
    memory_used_mib,
    power_min_limit_w,
    temp_target_c,
    temp_tlimit_margin_c,
    clock_graphics_mhz,
    clock_sm_mhz,
    clock_mem_mhz,
    clock_graphics_max_mhz,
    clock_sm_max_mhz,
    clock_mem_max_mhz,
    remapped_rows_correctable,
    p2p_nvlink,
    p2p_atomics,
    p2p_pcie,
    nvml_version,
    rigcheck_version,
    link_speed_gts,
    link_speed_max_gts,
    link_width,
    used_bytes,
)
# model/telemetry.py
power_source

# pydantic validators and typer commands: pydantic calls a @field_validator / @model_validator, typer calls a command
# or callback registered with app.command()(fn) / app.callback()(fn), and passes each option as an argument (--ascii
# is read before typer runs: cli/app.py main)
# cli/app.py
(_root, ascii_only)
# cli/fleet.py
fleet
# cli/power_plan.py
power_plan
# model/burn.py
_._run_fields_together
# model/site_config.py
(_._window, _._codes, _._application_only, _._check_bands)

# pynvml's interface (probe/nvml/library.py): a Protocol naming the functions and arguments rigcheck may call, stubs
# of the library, not code
# probe/nvml/library.py
(
    _.nvmlSystemGetDriverVersion,
    _.nvmlSystemGetNVMLVersion,
    _.nvmlSystemGetCudaDriverVersion_v2,
    _.nvmlSystemGetCudaDriverVersion,
    sensor,
    nvmlDeviceGetTemperatureThreshold,
    clock_type,
    nvmlDeviceGetMaxClockInfo,
    nvmlDeviceGetViolationStatus,
    nvmlDeviceGetTotalEccErrors,
    counter_type,
    nvmlDeviceGetRetiredPages,
    node_set_size,
    cpu_set_size,
    nvmlDeviceGetNvLinkState,
    nvmlDeviceGetNvLinkVersion,
    nvmlDeviceGetNvLinkRemotePciInfo,
    nvmlDeviceGetNvLinkRemoteDeviceType,
    handle1,
    handle2,
    nvmlDeviceGetP2PStatus,
    caps_index,
    nvmlErrorString,
    nvmlDeviceGetGpuFabricInfoV,
    nvmlDeviceGetGpuFabricInfo,
    nvmlDeviceGetNvLinkErrorCounter,
)

# rich and typer hooks: rich calls Console.on_broken_pipe and reads a RegexHighlighter's highlights; typer reads a
# command's __doc__ for its help; a Protocol's argument names are its interface
# bench/gpu_select.py
deep
# cli/bench_collectives.py
_.__doc__
# cli/common.py
_.on_broken_pipe
# cli/group_help.py
highlights

# fields set on the snapshot and telemetry models from NVML (probe/nvml): pydantic fields written to the JSON
# probe/nvml/device.py
(_.memory_total_mib, _.memory_used_mib, _.power_min_limit_w, _.remapped_rows_correctable)
# probe/nvml/poller.py
_.power_source

# parsed fields kept for the record: a TypedDict's keys, the columns a burn's hot loop reads through attrgetter, what
# a reader parses from a saved output (set through setattr, or kept on the parsed run)
# bench/train.py
(step_time_median_ms, step_time_p10_ms, step_time_p90_ms, step_time_min_ms, step_time_max_ms)
# checks/burn/columns.py
_.temp_loaded
# facts/nvlink.py
flagship
# readers/reference/mamf.py
(hip, _.hip)
# readers/reference/nccl_tests.py
validation
# readers/smi/unreadable.py
printed_index

# used by tests and tools only: an API the tests hold to its contract (tests/), the schema files' writer
# (tools/update_schemas.py)
# bench/device/p2p.py
matrix_text
# checks/fleet/pairs.py
rounds
# checks/verdicts.py
contract_tables
# facts/bands.py
best_healthy
# facts/catalog.py
all_names
# facts/connectors.py
rated_watts
# facts/nvlink.py
_.max_gbps
# model/schema.py
(SCHEMA_DIR, FILE_FORMATS, schema_files, document_schemas)
# model/telemetry.py
_.for_gpu
# monitor/prometheus.py
exposition
# monitor/session.py
gpu_summary
# readers/reference/dcgm_diag.py
parse_dcgm_diag_text
# bench/fleet/state.py: the test hooks' names, which the tests clear from the environment they launch with
HOOK_VARS
# model/fleet.py: keys of the rigcheck.fleet/1 document (read by the JSON, not by code)
_.mean_us
_.late_max_us
# checks/history/drift.py: the trend's slope, read by its tests (the alert speaks of the fitted start and end)
_.slope_per_day
