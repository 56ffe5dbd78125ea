"""The TUI's "time by stage" lists compile stages only, from a real torch 2.13 compilation_metrics
record (its keys as torch writes them, timings and all)."""

from fxlens.tui.view_metrics import _stage_times

# the timing keys of a real inductor compile's compilation_metrics (HF Llama, torch 2.13.0+cpu)
REAL = {
    "entire_frame_compile_time_s": 111.335195,
    "backend_compile_time_s": 102.910398,
    "inductor_compile_time_s": 86.484801,
    "code_gen_time_s": 82.407997,
    "dynamo_time_before_restart_s": 0.0,
    "structured_logging_overhead_s": 0.507326,
    "remote_cache_time_saved_s": 500.0,  # not a stage: time a cache saved
    "distributed_ephemeral_timeout_us": 900_000_000,  # not a stage: a timeout setting
    "duration_us": 111335195,
    "dynamo_cumulative_compile_time_us": 111335195,
    "aot_autograd_cumulative_compile_time_us": 102910398,
    "triton_compile_time_us": 33059851,
    "pre_grad_pass_time_us": 38863,
    "post_grad_pass_time_us": 392238,
    "joint_graph_pass_time_us": 3005685,
    "gc_time_us": 881,
    "guard_latency_us": 629,
    "start_time_us": 1796382999181932,
}


def test_only_stages_and_none_larger_than_the_total():
    stages = dict(_stage_times(REAL))
    names = " ".join(stages)
    assert "remote_cache" not in names and "timeout" not in names and "cumulative" not in names
    assert max(stages.values()) <= REAL["entire_frame_compile_time_s"]
    assert stages["backend (AOTAutograd + compiler)"] == REAL["backend_compile_time_s"]
    assert abs(stages["    Triton compile"] - 33.059851) < 1e-9
