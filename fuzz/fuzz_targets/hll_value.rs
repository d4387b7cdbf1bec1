#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nsqr_fuzz_targets::hll_value(data));
