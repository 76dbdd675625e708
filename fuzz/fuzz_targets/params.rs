//! Fuzz target `params`: see `fuzz/harness.rs` and docs/robustness.md.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(init: harness::init(), |data: &[u8]| harness::params(data));
